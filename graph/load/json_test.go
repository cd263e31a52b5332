package load

import (
	"strings"
	"testing"
)

func TestParseJSONLine(t *testing.T) {
	tests := []struct {
		name, in, err string
	}{
		{"ok", `{"a":[1,2.5e3,-0,"x\n"],"b":{"c":null,"d":true}}`, ""},
		{"dup nested", `{"a":{"b":1,"b":2}}`, `duplicate field "a.b"`},
		{"dup in array object", `{"a":[{"b":1,"b":2}]}`, `duplicate field "a[].b"`},
		{"leading zero", `{"a":01}`, "expected ','"},
		{"bare word", `{"a":nul}`, "invalid literal"},
		{"control char", "{\"a\":\"x\ty\"}", "control character"},
		{"deep", strings.Repeat("[", 100) + strings.Repeat("]", 100), "nested deeper"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseJSONLine([]byte(tc.in))
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("unexpected error %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("got %v, want %q", err, tc.err)
			}
		})
	}
}
