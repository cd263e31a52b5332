package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestExpandRoundTrips: a path parameter the client fills with Expand is
// the value the server's mux hands back (PathValue), for hostile values
// too: spaces, '%', '?', '#', quotes, non-ASCII, '/' and "//" (which a
// path kept unescaped would have the mux clean and redirect).
func TestExpandRoundTrips(t *testing.T) {
	values := []string{"main", "feature/x", "a b", "100%", "q?x=1", "h#frag", `quo"te`, "fé/ü", "a%2Fb", "semi;colon", "plus+sign", "ends/", "x//y", "tab\tname"}
	for _, rt := range Routes() {
		if !strings.Contains(rt.Path, "{") {
			continue
		}
		mux := http.NewServeMux()
		var got []string
		mux.HandleFunc(rt.Pattern(), func(w http.ResponseWriter, r *http.Request) {
			got = nil
			for _, name := range []string{"graph_id", "branch", "commit_id", "name"} {
				if v := r.PathValue(name); v != "" {
					got = append(got, v)
				}
			}
		})
		for _, v := range values {
			params := []string{"default"}
			if strings.Count(rt.Path, "{") == 2 {
				params = append(params, v)
			}
			got = nil
			req := httptest.NewRequest(rt.Method, "http://x"+rt.Expand(params...), nil)
			w := httptest.NewRecorder()
			mux.ServeHTTP(w, req)
			if w.Code != 200 || strings.Join(got, "|") != strings.Join(params, "|") {
				t.Errorf("%s with %q: status %d, the mux read %q", rt.OperationID, v, w.Code, got)
			}
		}
	}
}
