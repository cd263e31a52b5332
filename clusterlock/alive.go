package clusterlock

import "github.com/omnigraph-go/omnigraph/internal/procinfo"

// processAlive is the operating system's answer (internal/procinfo), used
// unless Options.Alive says otherwise.
func processAlive(pid int) bool { return procinfo.Alive(pid) }

// processInstance names this kernel instance and pid namespace for
// Owner.Instance.
func processInstance() string { return procinfo.Instance() }
