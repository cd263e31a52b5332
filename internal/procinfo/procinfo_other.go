//go:build !unix

package procinfo

// Alive cannot probe processes on this platform, so it never calls one
// gone.
func Alive(pid int) bool { return true }

// Exited is never known on this platform.
func Exited(pid int) bool { return false }

// Instance is unknown on this platform.
func Instance() string { return "" }
