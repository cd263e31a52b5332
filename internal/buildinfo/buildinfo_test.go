package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"
)

// TestFrom: the toolchain's stamp wins over the linker's values, the
// linker fills what the toolchain could not stamp, and the one-line form
// shows version, revision, modified, date and Go.
func TestFrom(t *testing.T) {
	stamped := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.4.0"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.time", Value: "2026-11-30T10:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		l    Linked
		want Info
		line string
	}{
		{"stamped", stamped, Linked{Revision: "ffff", Date: "2026-12-01T00:00:00Z"},
			Info{Version: "v1.4.0", Revision: "0123456789abcdef0123456789abcdef01234567", Modified: true, BuildDate: "2026-12-01T00:00:00Z", CommitDate: "2026-11-30T10:00:00Z", GoVersion: "go1.26.8"},
			"v1.4.0 revision 0123456789ab (modified), built 2026-12-01T00:00:00Z, go1.26.8"},
		{"linked only", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, Linked{Revision: "abcdef1234567890", Date: "2026-12-01T00:00:00Z"},
			Info{Version: "(devel)", Revision: "abcdef1234567890", BuildDate: "2026-12-01T00:00:00Z", GoVersion: "go1.26.8"},
			"(devel) revision abcdef123456, built 2026-12-01T00:00:00Z, go1.26.8"},
		{"commit date only", &debug.BuildInfo{GoVersion: "go1.26.8", Settings: stamped.Settings[:2]}, Linked{},
			Info{Version: "(devel)", Revision: "0123456789abcdef0123456789abcdef01234567", CommitDate: "2026-11-30T10:00:00Z", GoVersion: "go1.26.8"},
			"(devel) revision 0123456789ab, committed 2026-11-30T10:00:00Z, go1.26.8"},
	}
	for _, tc := range tests {
		got := From(tc.bi, tc.l)
		if got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
		if got.String() != tc.line {
			t.Errorf("%s: %q, want %q", tc.name, got.String(), tc.line)
		}
	}
	if in := From(nil, Linked{}); in.Version != "(devel)" || !strings.HasPrefix(in.GoVersion, "go") {
		t.Errorf("no build info: %+v", in)
	}
}
