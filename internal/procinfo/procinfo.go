// Package procinfo answers two questions about processes of this machine
// that the cluster lock asks: is a pid still a live process, and which
// kernel instance and pid namespace does this process run in (so a pid in
// a lock record is only judged where it means the same process). It reads
// the operating system (kill(2), /proc) and imports nothing of the project.
package procinfo
