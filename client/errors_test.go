package client_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/client"
	"github.com/omnigraph-go/omnigraph/internal/testenv"
)

const policy = `
@id("alice-all") permit (principal == Omnigraph::Actor::"alice", action, resource);
@id("bob-reads") permit (principal == Omnigraph::Actor::"bob", action == Omnigraph::Action::"read", resource);
`

// wantError checks err is a *Error of kind with status and code.
func wantError(t *testing.T, what string, err error, kind error, status int, code api.ErrorCode) *client.Error {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) {
		t.Fatalf("%s: %v is not a *client.Error", what, err)
	}
	if !errors.Is(err, kind) || e.Status != status || e.Code != code || e.Message == "" {
		t.Fatalf("%s: status %d code %q (%v), want %d %q matching %v", what, e.Status, e.Code, err, status, code, kind)
	}
	return e
}

// TestTypedErrors drives each refusal the server answers through the
// client against the real binary and checks the *Error: status, code,
// errors.Is kind and the envelope's detail.
func TestTypedErrors(t *testing.T) {
	ctx := ctxT(t)
	url := exampleGraph(t, filepath.Join(t.TempDir(), "graph"))
	file, secrets := tokens(t, "alice", "bob")
	pol := filepath.Join(t.TempDir(), "policy.cedar")
	if err := os.WriteFile(pol, []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	s := serve(t, nil, "--store", url, "--tokens", file, "--policy", pol, "--max-body-bytes", "4096")
	g := newClient(t, s.base, secrets["alice"]).Graph("default")
	bob := newClient(t, s.base, secrets["bob"]).Graph("default")

	_, err := g.Query(ctx, api.QueryRequest{Query: "query q( { nope"})
	wantError(t, "a query that does not parse", err, client.ErrBadRequest, 400, api.CodeBadRequest)

	_, err = newClient(t, s.base, "not-a-token").Graphs(ctx)
	wantError(t, "a wrong token", err, client.ErrUnauthorized, 401, api.CodeUnauthorized)

	_, err = bob.Mutate(ctx, api.MutateRequest{Query: `mutation m() { insert Person { handle: "bob-was-here", name: "B" } }`})
	wantError(t, "a write the policy denies", err, client.ErrForbidden, 403, api.CodeForbidden)

	_, err = g.Snapshot(ctx, "no-such-branch")
	wantError(t, "an unknown branch", err, client.ErrNotFound, 404, api.CodeNotFound)

	_, err = g.Load(ctx, strings.NewReader(`{"type":"Person","data":{"handle":"alice","name":"Again"}}`+"\n"), client.LoadOptions{Mode: "append"})
	e := wantError(t, "a strict insert of an existing id", err, client.ErrConflict, 409, api.CodeConflict)
	if e.Details.KeyConflict == nil || e.Details.KeyConflict.TypeName != "Person" {
		t.Fatalf("key conflict detail: %+v", e.Details)
	}

	if _, err := g.CreateBranch(ctx, api.BranchCreateRequest{Name: "rival"}); err != nil {
		t.Fatal(err)
	}
	for branch, age := range map[string]int{"rival": 50, "main": 51} {
		if _, err := g.Mutate(ctx, api.MutateRequest{Branch: branch, Query: fmt.Sprintf(`mutation m() { update Person set { age: %d } where handle = "alice" }`, age)}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = g.Merge(ctx, api.MergeRequest{Source: "rival"})
	e = wantError(t, "a merge with conflicts", err, client.ErrConflict, 409, api.CodeConflict)
	if len(e.Details.MergeConflicts) != 1 || e.Details.MergeConflicts[0].EntityID != "alice" {
		t.Fatalf("merge conflicts: %+v", e.Details.MergeConflicts)
	}

	snap, err := g.Snapshot(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Mutate(ctx, api.MutateRequest{Query: `mutation m() { insert Person { handle: "stale", name: "S" } }`}, client.IfGraphCommit("01JZ6Y1F0R5N2P8S6T4VAW3XYZ"))
	e = wantError(t, "a stale precondition", err, client.ErrPrecondition, 412, "")
	if e.Details.PreconditionFailure == nil || e.Details.PreconditionFailure.Actual != snap.GraphCommitID {
		t.Fatalf("precondition detail: %+v", e.Details)
	}

	_, err = g.Mutate(ctx, api.MutateRequest{Query: "mutation m() { insert Person { handle: \"big\", name: \"" + strings.Repeat("x", 5000) + "\" } }"})
	e = wantError(t, "a body over the limit", err, client.ErrTooLarge, 413, api.CodeBadRequest)
	if e.Details.ResourceLimit == nil || e.Details.ResourceLimit.Limit != 4096 {
		t.Fatalf("resource limit detail: %+v", e.Details)
	}
	if after, _ := g.Snapshot(ctx, ""); after.GraphCommitID != snap.GraphCommitID {
		t.Fatalf("a refused request moved the head")
	}
}

// TestTypedErrorsInjectedS3: the server's own unknown outcome (the store's
// answer to the publish is lost: 500 outcome_unknown with the check) and
// recovery_required (the publish refused after the table commits: 503 with
// the operation id; the server then stops) reach the client as typed
// errors; after the restart the check finds the first write's commit.
func TestTypedErrorsInjectedS3(t *testing.T) {
	ctx := ctxT(t)
	url := exampleGraph(t, testenv.S3(t))
	endpoint := os.Getenv("AWS_ENDPOINT_URL_S3")
	if endpoint == "" {
		endpoint = os.Getenv("AWS_ENDPOINT_URL")
	}
	proxy := testenv.NewProxy(t, endpoint)
	env := []string{"AWS_ENDPOINT_URL_S3=" + proxy.URL}
	s := serve(t, env, "--store", url)
	g := newClient(t, s.base, "").Graph("default")
	publish := func(r testenv.Request) bool {
		return r.Method == http.MethodPut && strings.Contains(r.Path, "/__manifest/branches/main/.v/")
	}

	proxy.Arm(testenv.Rule{Match: publish, Times: 1 << 20, Status: 0})
	_, err := g.Mutate(ctx, api.MutateRequest{Query: `mutation m() { insert Person { handle: "lost", name: "Lost" } }`})
	e := wantError(t, "a publish without an answer", err, client.ErrOutcomeUnknown, 500, api.CodeInternal)
	check, unknown := e.OutcomeUnknown()
	if !unknown || check != "GET /graphs/default/commits?branch=main" || !errors.Is(err, client.ErrInternal) {
		t.Fatalf("outcome unknown: check %q (%v)", check, err)
	}
	proxy.Reset()

	proxy.Arm(testenv.Rule{Match: publish, Times: 1 << 20, Status: http.StatusForbidden,
		Header: http.Header{"Content-Type": {"application/xml"}}, Body: `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`})
	_, err = g.Mutate(ctx, api.MutateRequest{Query: `mutation m() { insert Person { handle: "refused", name: "Refused" } }`})
	e = wantError(t, "a publish refused after the table commits", err, client.ErrRecoveryRequired, 503, "")
	if !errors.Is(err, client.ErrUnavailable) || e.Details.RecoveryRequired.OperationID == "" {
		t.Fatalf("recovery required: %+v", e.Details)
	}
	if code := s.wait(t); code != 2 {
		t.Fatalf("after recovery_required the server exited %d, want 2", code)
	}
	proxy.Reset()

	// The restarted server resolves both; each write is there exactly once.
	s = serve(t, env, "--store", url)
	g = newClient(t, s.base, "").Graph("default")
	for _, h := range []string{"lost", "refused"} {
		if n := count(ctx, t, g, "main", `$p: Person { handle: "`+h+`" }`); n > 1 {
			t.Fatalf("%s is stored %d times", h, n)
		}
	}
}

// cutProxy forwards TCP connections to target; while armed, the next
// connection's answer is swallowed and the connection closed once the
// server has answered: the request landed, the client never hears.
type cutProxy struct {
	ln    net.Listener
	armed atomic.Bool
	cuts  atomic.Int32
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln}
	t.Cleanup(func() { ln.Close() })
	host := strings.TrimPrefix(target, "http://")
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				up, err := net.Dial("tcp", host)
				if err != nil {
					return
				}
				defer up.Close()
				go io.Copy(up, c)
				if p.armed.CompareAndSwap(true, false) {
					buf := make([]byte, 1)
					if _, err := up.Read(buf); err == nil {
						p.cuts.Add(1)
					}
					return
				}
				io.Copy(c, up)
			}()
		}
	}()
	return p
}

func (p *cutProxy) url() string { return "http://" + p.ln.Addr().String() }

// TestLostAnswer: a write whose answer never reaches the client (the
// connection drops after the server answered) is ErrOutcomeUnknown with
// status 0 and the check to run, never retried; the check shows it
// landed once. A read whose answer is lost is sent again and succeeds.
func TestLostAnswer(t *testing.T) {
	ctx := ctxT(t)
	url := exampleGraph(t, filepath.Join(t.TempDir(), "graph"))
	s := serve(t, nil, "--store", url)
	p := newCutProxy(t, s.base)
	var retries []client.Retry
	// One connection per request, so that arming the proxy cuts the next
	// request's answer.
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	c := newClient(t, p.url(), "", client.WithHTTPClient(hc), client.WithRetryHook(func(r client.Retry) { retries = append(retries, r) }))
	g := c.Graph("default")

	p.armed.Store(true)
	_, err := g.Mutate(ctx, api.MutateRequest{Branch: "main", Query: `mutation m() { insert Person { handle: "unheard", name: "Unheard" } }`})
	var e *client.Error
	if !errors.As(err, &e) || !errors.Is(err, client.ErrOutcomeUnknown) || e.Status != 0 || p.cuts.Load() != 1 {
		t.Fatalf("a write whose answer was lost: %v (cuts %d)", err, p.cuts.Load())
	}
	if check, _ := e.OutcomeUnknown(); check != "GET /graphs/default/commits?branch=main" {
		t.Fatalf("check %q", check)
	}
	if len(retries) != 0 {
		t.Fatalf("a write was sent again: %+v", retries)
	}
	if n := count(ctx, t, g, "main", `$p: Person { handle: "unheard" }`); n != 1 {
		t.Fatalf("the unheard write is stored %d times, want 1", n)
	}

	p.armed.Store(true)
	out, err := g.Query(ctx, api.QueryRequest{Query: `query q() { match { $p: Person { handle: "unheard" } } return { $p.name } }`})
	if err != nil || out.RowCount != 1 || len(retries) != 1 || retries[0].Operation != "query" || p.cuts.Load() != 2 {
		t.Fatalf("a read whose answer was lost: %+v %v, retries %+v", out, err, retries)
	}
}
