package azure_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/azure"
	"github.com/omnigraph-go/omnigraph/conformance"
	"github.com/omnigraph-go/omnigraph/internal/testenv"
)

func TestConformanceAzure(t *testing.T) {
	testenv.AzureContainer(t)
	conformance.Run(t, func(t *testing.T) backend.StorageAdapter {
		return testenv.Open(t, testenv.Azure(t))
	}, conformance.WithDeny(deniedAzure))
}

// deniedAzure is the test container opened with an account key Azurite
// refuses (a valid base64 key that is not the account's).
func deniedAzure(t *testing.T) backend.StorageAdapter {
	cfg, err := azure.ConfigFromEnv(testenv.AzureContainer(t))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ConnectionString != "" {
		t.Fatal("deniedAzure needs the account and key form of the environment, not a connection string")
	}
	cfg.Key = base64.StdEncoding.EncodeToString([]byte("wrong-key-wrong-key-wrong-key-wrong-key-0123456789"))
	cfg.SASToken = ""
	st, err := azure.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return backend.WithPrefix(st, testenv.Prefix(t)+"/")
}

// TestLostAnswerInjectedAzure: see testenv.LostAnswerInjected.
func TestLostAnswerInjectedAzure(t *testing.T) {
	testenv.LostAnswerInjected(t, testenv.Open(t, testenv.Azure(t)))
}

// proxiedAzure returns a store at a fresh prefix whose requests pass
// through a recording proxy.
func proxiedAzure(t *testing.T) (backend.StorageAdapter, *testenv.Proxy) {
	return proxiedAzureTimeout(t, 0)
}

// proxiedAzureTimeout is proxiedAzure with each request bounded by timeout
// (zero: the default).
func proxiedAzureTimeout(t *testing.T, timeout time.Duration) (backend.StorageAdapter, *testenv.Proxy) {
	name := testenv.AzureContainer(t)
	cfg, err := azure.ConfigFromEnv(name)
	if err != nil {
		t.Fatal(err)
	}
	u := strings.TrimSuffix(cfg.Endpoint, "/")
	i := strings.LastIndex(u, "/")
	p := testenv.NewProxy(t, u[:i])
	cfg.Endpoint = p.URL + u[i:]
	cfg.RequestTimeout = timeout
	st, err := azure.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	prefix := testenv.Prefix(t) + "/"
	t.Cleanup(func() { _ = st.DeletePrefix(context.Background(), prefix) })
	return backend.WithPrefix(st, prefix), p
}

// TestListPagesCostOneRequestAzure: Azure has no start-after, so the
// adapter remembers each page's continuation marker; walking a listing page
// by page costs one request per page, not a rescan.
func TestListPagesCostOneRequestAzure(t *testing.T) {
	st, p := proxiedAzure(t)
	ctx := t.Context()
	for i := 0; i < 10; i++ {
		if _, err := st.Put(ctx, fmt.Sprintf("k%02d", i), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	p.Reset()
	var keys []string
	opts := backend.ListOptions{MaxKeys: 3}
	for {
		page, err := st.List(ctx, "", opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Objects {
			keys = append(keys, o.Key)
		}
		if !page.Truncated {
			break
		}
		opts.StartAfter = page.Objects[len(page.Objects)-1].Key
	}
	if len(keys) != 10 || keys[0] != "k00" || keys[9] != "k09" {
		t.Fatalf("listed %v", keys)
	}
	if n := p.Count(nil); n != 4 {
		t.Fatalf("4 pages of a 10-key listing cost %d requests, want 4", n)
	}
}

// TestWireAzure runs the on-the-wire retry and lost-answer rules through a
// misbehaving proxy in front of Azurite.
func TestWireAzure(t *testing.T) {
	testenv.RunWire(t, testenv.Wire{
		Open:     proxiedAzure,
		IsWrite:  testenv.IsMethod(http.MethodPut),
		IsRead:   testenv.IsMethod(http.MethodGet),
		Throttle: testenv.Rule{Status: http.StatusServiceUnavailable, Header: http.Header{"X-Ms-Error-Code": {"ServerBusy"}}},
	})
}

// TestReissueWireAzure runs the manifest re-issue rule through a
// misbehaving proxy in front of Azurite (see testenv.RunReissue).
func TestReissueWireAzure(t *testing.T) {
	testenv.RunReissue(t, testenv.ReissueWire{
		Open:     proxiedAzureTimeout,
		IsWrite:  testenv.IsMethod(http.MethodPut),
		IsRead:   testenv.IsMethod(http.MethodGet),
		Throttle: testenv.Rule{Status: http.StatusServiceUnavailable, Header: http.Header{"X-Ms-Error-Code": {"ServerBusy"}}},
	})
}

// TestMissingBucketLogsStoreStatusAzure: a missing bucket is a configuration
// failure logged with the store's own status (404), not 500.
func TestMissingBucketLogsStoreStatusAzure(t *testing.T) {
	testenv.MissingBucketLogsStoreStatus(t, testenv.MissingAzure(t))
}
