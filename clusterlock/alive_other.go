//go:build !unix

package clusterlock

// processAlive cannot probe processes on this platform, so it never calls a
// holder gone: the message then only names the unlock command.
func processAlive(pid int) bool { return true }

// processInstance is unknown on this platform.
func processInstance() string { return "" }
