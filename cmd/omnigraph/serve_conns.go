package main

import "syscall"

// defaultMaxConnections is half the process's open-file limit (Go raises
// the soft limit to the hard one at start), at least 16: the other half
// stays for storage reads, logs and the lock, so clients that open
// connections without end cannot starve them (accept4: too many open
// files).
func defaultMaxConnections() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == 0 {
		return 512
	}
	return int(max(16, min(rl.Cur/2, 1<<16)))
}
