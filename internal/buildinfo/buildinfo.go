// Package buildinfo says which build of omnigraph is running: the module
// version, the VCS revision, whether the tree had uncommitted changes,
// when it was built and with which Go. `omnigraph version`, /healthz and
// the cluster lock records show it.
//
// The Go toolchain stamps the module version and, when it can, the VCS
// revision and commit time into every binary (runtime/debug). It cannot in
// every checkout (a git worktree, GOFLAGS=-buildvcs=false) and never
// records the build time, so `make build` also passes them with -ldflags
// -X (see the Makefile); a stamped value wins over a linker one.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Set by the linker (make build): -X <this package>.revision=... etc.
var (
	revision string // the VCS revision (git rev-parse HEAD)
	modified string // "true" when the tree had uncommitted changes
	date     string // the build time, RFC 3339 UTC
)

// Info is what a binary knows about its own build (its wire form is
// api.BuildInfo, made by server.BuildOutput).
type Info struct {
	// Version is the module version: a release tag or pseudo-version for
	// `go install ...@version`, "(devel)" for a build from a checkout.
	Version string
	// Revision is the VCS commit the binary was built from ("" unknown).
	Revision string
	// Modified: the tree had uncommitted changes.
	Modified bool
	// BuildDate is when the binary was built (RFC 3339 UTC), "" when the
	// build did not say (a plain go build).
	BuildDate string
	// CommitDate is the time of Revision's commit, when the toolchain
	// stamped it.
	CommitDate string
	// GoVersion is the toolchain that built the binary.
	GoVersion string
}

// Read is the running binary's Info.
func Read() Info {
	bi, _ := debug.ReadBuildInfo()
	return From(bi, Linked{Revision: revision, Modified: modified == "true", Date: date})
}

// Linked are the values -ldflags -X set (empty when not).
type Linked struct {
	Revision string
	Modified bool
	Date     string
}

// From builds Info from the toolchain's build info (nil: none) and the
// linker's values: what the toolchain stamped wins, the linker fills the
// rest.
func From(bi *debug.BuildInfo, l Linked) Info {
	in := Info{Version: "(devel)", Revision: l.Revision, Modified: l.Modified, BuildDate: l.Date, GoVersion: runtime.Version()}
	if bi == nil {
		return in
	}
	if v := bi.Main.Version; v != "" {
		in.Version = v
	}
	if bi.GoVersion != "" {
		in.GoVersion = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Revision = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		case "vcs.time":
			in.CommitDate = s.Value
		}
	}
	return in
}

// String is the one-line form: "(devel) revision 0123456789ab (modified),
// built 2026-12-02T06:00:00Z, go1.26.8".
func (i Info) String() string {
	var b strings.Builder
	b.WriteString(i.Version)
	if i.Revision != "" {
		fmt.Fprintf(&b, " revision %s", short(i.Revision))
		if i.Modified {
			b.WriteString(" (modified)")
		}
	}
	switch {
	case i.BuildDate != "":
		fmt.Fprintf(&b, ", built %s", i.BuildDate)
	case i.CommitDate != "":
		fmt.Fprintf(&b, ", committed %s", i.CommitDate)
	}
	fmt.Fprintf(&b, ", %s", i.GoVersion)
	return b.String()
}

// short is the first 12 characters of a revision, as git abbreviates.
func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}
