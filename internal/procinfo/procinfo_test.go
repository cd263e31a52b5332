package procinfo_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/internal/procinfo"
)

// TestKilledUnreapedProcessIsNotAlive pins issue 26 item 15's cause: a
// lock holder killed but not yet reaped by its parent (a zombie) is gone:
// kill(pid, 0) still finds it, /proc says it has exited. A running child
// is alive, and so is this process.
func TestKilledUnreapedProcessIsNotAlive(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc on this platform")
	}
	if !procinfo.Alive(os.Getpid()) {
		t.Fatal("this process is reported dead")
	}
	c := exec.Command("sleep", "600")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	pid := c.Process.Pid
	if !procinfo.Alive(pid) {
		t.Fatalf("a running child (pid %d) is reported gone", pid)
	}
	if err := c.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Not reaped yet: wait (without Wait) until the kernel marks it exited.
	for deadline := time.Now().Add(60 * time.Second); !procinfo.Exited(pid); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the killed child never showed as exited")
		}
	}
	if procinfo.Alive(pid) {
		t.Errorf("a killed, unreaped process (pid %d) is reported alive", pid)
	}
	c.Wait()
	if procinfo.Alive(pid) {
		t.Errorf("a reaped process (pid %d) is reported alive", pid)
	}
}

// TestInstance: on Linux the instance names the boot and the pid
// namespace, and is stable within a process.
func TestInstance(t *testing.T) {
	if _, err := os.Stat("/proc/sys/kernel/random/boot_id"); err != nil {
		t.Skip("no boot id on this platform")
	}
	a, b := procinfo.Instance(), procinfo.Instance()
	if a == "" || a != b || !strings.Contains(a, "/pid:[") {
		t.Fatalf("Instance() = %q then %q", a, b)
	}
}
