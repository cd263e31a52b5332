package server

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/graph/export"
)

// failingWriter takes the first limit bytes of a response, then fails
// every write (a client that went away mid-stream).
type failingWriter struct {
	*httptest.ResponseRecorder
	limit int
}

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.Body.Len()+len(p) > w.limit {
		return 0, errors.New("connection reset by peer")
	}
	return w.ResponseRecorder.Write(p)
}

// TestServerExportCut: an export that fails after its first bytes is cut
// (net/http's ErrAbortHandler: the connection drops, the body has no
// completion trailer), and that is not a crash: admission stays open,
// OnFatal is not called, and the server goes on serving.
func TestServerExportCut(t *testing.T) {
	g := testGraph(t)
	fatal := 0
	s, base := newTestServer(t, g, Config{OnFatal: func(string) { fatal++ }})
	var b strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&b, `{"type":"Person","data":{"name":"p%05d-%s"}}`+"\n", i, strings.Repeat("x", 60))
	}
	c := &client{t: t, base: base}
	st, m, _ := c.do("POST", "/graphs/default/load/ndjson?mode=append", "application/x-ndjson", b.String())
	mustStatus(t, "load", st, 200, m)
	old := export.ChunkRows
	export.ChunkRows = 50
	defer func() { export.ChunkRows = old }()

	w := &failingWriter{ResponseRecorder: httptest.NewRecorder(), limit: 100 << 10}
	func() {
		defer func() {
			if p := recover(); p != http.ErrAbortHandler {
				t.Fatalf("the cut export must abort the handler, got panic %v", p)
			}
		}()
		// httptest's default Host (example.com) is not loopback: open
		// mode would refuse it.
		s.Handler().ServeHTTP(w, httptest.NewRequest("GET", "http://127.0.0.1/graphs/default/export", nil))
	}()
	if w.Code != 200 || w.Body.Len() == 0 || w.Body.Len() > 100<<10 || w.Header().Get(api.TrailerExportEntities) != "" {
		t.Fatalf("cut export: status %d, %d bytes, trailer %q", w.Code, w.Body.Len(), w.Header().Get(api.TrailerExportEntities))
	}
	if s.adm.isClosed() || fatal != 0 {
		t.Fatalf("a cut export must not stop the server: closed %v, fatal %d", s.adm.isClosed(), fatal)
	}
	st, m = c.json("GET", "/graphs/default/branches", "")
	mustStatus(t, "after the cut", st, 200, m)
}
