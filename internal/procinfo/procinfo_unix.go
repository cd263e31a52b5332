//go:build unix

package procinfo

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Alive reports whether pid names a live process on this host. A process
// we may not signal (EPERM) exists; ESRCH proves it is gone, and so does a
// zombie (killed, not yet reaped by its parent: it runs no code and holds
// nothing), which kill(pid, 0) still finds. A pid <= 0 proves nothing and
// is reported alive.
func Alive(pid int) bool {
	if pid <= 0 {
		return true
	}
	err := syscall.Kill(pid, 0)
	if err != nil && errors.Is(err, syscall.ESRCH) {
		return false
	}
	return !Exited(pid)
}

// Exited reports whether /proc says pid has exited but is not reaped yet
// (state Z or X). Where there is no /proc, it says no.
func Exited(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// "pid (comm) S ...": comm may hold spaces and parentheses, so the state
	// is the first field after the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return false
	}
	f := strings.Fields(s[i+1:])
	return len(f) > 0 && (f[0] == "Z" || f[0] == "X")
}

// Instance names this kernel instance and pid namespace: Linux's boot id
// and the pid namespace's inode, or "" where either is unknown.
func Instance() string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(boot)) + "/" + ns
}
