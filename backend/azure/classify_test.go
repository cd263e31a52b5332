package azure

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/internal/cloud"
)

func TestClassify(t *testing.T) {
	type want struct {
		kind    backend.Kind
		verdict cloud.Verdict
	}
	rerr := func(status int, code string) error {
		return fmt.Errorf("wrapped: %w", &azcore.ResponseError{StatusCode: status, ErrorCode: code})
	}
	cases := []struct {
		name                     string
		err                      error
		read, write, conditional want
	}{
		{name: "409 BlobAlreadyExists (Azurite create)", err: rerr(409, "BlobAlreadyExists"), read: want{backend.KindPrecondition, cloud.Stop}, write: want{backend.KindPrecondition, cloud.Stop}, conditional: want{backend.KindPrecondition, cloud.Stop}},
		{name: "412 ConditionNotMet", err: rerr(412, "ConditionNotMet"), read: want{backend.KindPrecondition, cloud.Stop}, write: want{backend.KindPrecondition, cloud.Stop}, conditional: want{backend.KindPrecondition, cloud.Stop}},
		{name: "404 BlobNotFound", err: rerr(404, "BlobNotFound"), read: want{backend.KindNotFound, cloud.Stop}, write: want{backend.KindNotFound, cloud.Stop}, conditional: want{backend.KindNotFound, cloud.Stop}},
		{name: "404 ContainerNotFound", err: rerr(404, "ContainerNotFound"), read: want{backend.KindConfiguration, cloud.Stop}, write: want{backend.KindConfiguration, cloud.Stop}, conditional: want{backend.KindConfiguration, cloud.Stop}},
		{name: "403 AuthenticationFailed", err: rerr(403, "AuthenticationFailed"), read: want{backend.KindConfiguration, cloud.Stop}, write: want{backend.KindConfiguration, cloud.Stop}, conditional: want{backend.KindConfiguration, cloud.Stop}},
		{name: "400 InvalidHeaderValue (API version)", err: rerr(400, "InvalidHeaderValue"), read: want{backend.KindConfiguration, cloud.Stop}, write: want{backend.KindConfiguration, cloud.Stop}, conditional: want{backend.KindConfiguration, cloud.Stop}},
		{name: "409 other conflict", err: rerr(409, "LeaseIdMissing"), read: want{backend.KindPermanent, cloud.Stop}, write: want{backend.KindPermanent, cloud.Stop}, conditional: want{backend.KindPermanent, cloud.Stop}},
		{name: "503 ServerBusy", err: rerr(503, "ServerBusy"), read: want{backend.KindTransient, cloud.RetryThrottle}, write: want{backend.KindTransient, cloud.RetryThrottle}, conditional: want{backend.KindUnknown, cloud.Stop}},
		{name: "503 without code", err: rerr(503, ""), read: want{backend.KindTransient, cloud.RetryThrottle}, write: want{backend.KindUnknown, cloud.Stop}, conditional: want{backend.KindUnknown, cloud.Stop}},
		{name: "500", err: rerr(500, "InternalError"), read: want{backend.KindTransient, cloud.RetryClient}, write: want{backend.KindUnknown, cloud.Stop}, conditional: want{backend.KindUnknown, cloud.Stop}},
		{name: "500 OperationTimedOut", err: rerr(500, "OperationTimedOut"), read: want{backend.KindTransient, cloud.RetryClient}, write: want{backend.KindUnknown, cloud.Stop}, conditional: want{backend.KindUnknown, cloud.Stop}},
		{name: "timeout", err: fmt.Errorf("x: %w", context.DeadlineExceeded), read: want{backend.KindTransient, cloud.RetryClient}, write: want{backend.KindUnknown, cloud.Stop}, conditional: want{backend.KindUnknown, cloud.Stop}},
		{name: "untyped", err: errors.New("BlobAlreadyExists"), read: want{backend.KindUnknown, cloud.Stop}, write: want{backend.KindUnknown, cloud.Stop}, conditional: want{backend.KindUnknown, cloud.Stop}},
	}
	for _, c := range cases {
		for _, m := range []struct {
			name string
			mode mode
			want want
		}{{"read", read, c.read}, {"write", write, c.write}, {"conditional", conditional, c.conditional}} {
			t.Run(c.name+"/"+m.name, func(t *testing.T) {
				k, v := classify(c.err, m.mode)
				if k != m.want.kind || v != m.want.verdict {
					t.Fatalf("classify = %s, verdict %d; want %s, verdict %d", k, v, m.want.kind, m.want.verdict)
				}
			})
		}
	}
}

func clearAzureEnv(t *testing.T) {
	for _, k := range []string{EnvAccount, EnvKey, EnvSASToken, EnvConnectionString, EnvEndpoint, EnvEmulator, cloud.MaxRetriesEnv} {
		t.Setenv(k, "")
	}
}

const testKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

func TestOpenEnvContract(t *testing.T) {
	cases := []struct {
		name    string
		url     string
		env     map[string]string
		wantErr string // substring of the Configuration error; "" means success
	}{
		{name: "no credentials", url: "az://graphs/g", wantErr: EnvAccount},
		{name: "account without key or SAS", url: "az://graphs/g", env: map[string]string{EnvAccount: "acct"}, wantErr: EnvKey},
		{name: "account and key", url: "az://graphs/g", env: map[string]string{EnvAccount: "acct", EnvKey: testKey}},
		{name: "account and SAS", url: "az://graphs/g", env: map[string]string{EnvAccount: "acct", EnvSASToken: "?sv=2024&sig=abc"}},
		{name: "http endpoint refused", url: "az://graphs/g", env: map[string]string{EnvAccount: "acct", EnvKey: testKey, EnvEndpoint: "http://127.0.0.1:10000/acct"}, wantErr: EnvEmulator},
		{name: "http endpoint for an emulator", url: "az://graphs/g", env: map[string]string{EnvAccount: "acct", EnvKey: testKey, EnvEndpoint: "http://127.0.0.1:10000/acct", EnvEmulator: "true"}},
		{name: "http connection string refused", url: "az://graphs/g", env: map[string]string{EnvConnectionString: "DefaultEndpointsProtocol=http;AccountName=acct;AccountKey=" + testKey + ";BlobEndpoint=http://127.0.0.1:10000/acct;"}, wantErr: EnvEmulator},
		{name: "https connection string", url: "az://graphs/g", env: map[string]string{EnvConnectionString: "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + testKey + ";EndpointSuffix=core.windows.net"}},
		{name: "bad container name", url: "az://Graphs/g", env: map[string]string{EnvAccount: "acct", EnvKey: testKey}, wantErr: "container name"},
		{name: "port in URL", url: "az://graphs:80/g", env: map[string]string{EnvAccount: "acct", EnvKey: testKey}, wantErr: "container name only"},
		{name: "client retries", url: "az://graphs/g", env: map[string]string{EnvAccount: "acct", EnvKey: testKey, cloud.MaxRetriesEnv: "1"}, wantErr: cloud.MaxRetriesEnv},
		{name: "unknown parameter", url: "az://graphs/g?sas=1", env: map[string]string{EnvAccount: "acct", EnvKey: testKey}, wantErr: "unknown parameter"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clearAzureEnv(t)
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			s, err := backend.Open(context.Background(), c.url)
			if c.wantErr == "" {
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				s.Close()
				return
			}
			if !errors.Is(err, backend.ErrConfiguration) || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("Open = %v; want a Configuration error mentioning %q", err, c.wantErr)
			}
			if strings.Contains(err.Error(), testKey) {
				t.Fatalf("error carries the account key: %v", err)
			}
		})
	}
}

// TestErrorsCarryNoSecrets: a refused SAS request's error names neither
// the signature nor the request URL.
func TestErrorsCarryNoSecrets(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("x-ms-error-code", "AuthenticationFailed")
		w.WriteHeader(http.StatusForbidden)
	}))
	defer srv.Close()
	const sig = "SECRETSIGNATUREVALUE"
	s, err := New(context.Background(), Config{Container: "graphs", Account: "acct", SASToken: "sv=2024-01-01&sig=" + sig, Endpoint: srv.URL + "/acct", AllowHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Put(context.Background(), "k", []byte("x"))
	if !errors.Is(err, backend.ErrConfiguration) {
		t.Fatalf("Put = %v, want Configuration", err)
	}
	if strings.Contains(err.Error(), sig) || strings.Contains(err.Error(), srv.URL) {
		t.Fatalf("error text carries the SAS signature or URL: %v", err)
	}
}
