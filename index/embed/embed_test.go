package embed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestMockIsTheOriginals pins the built-in embedder to the original's mock
// algorithm, recomputed here step by step for "alpha".
func TestMockIsTheOriginals(t *testing.T) {
	seed := uint64(14695981039346656037)
	for _, c := range []byte("alpha") {
		seed ^= uint64(c)
		seed *= 1099511628211
	}
	want := make([]float64, 4)
	norm := 0.0
	for i := range want {
		seed ^= seed << 13
		seed ^= seed >> 7
		seed ^= seed << 17
		want[i] = float64(float32(float64(seed)/float64(math.MaxUint64))*2 - 1)
		norm += want[i] * want[i]
	}
	got := Mock("alpha", 4)
	for i := range want {
		if math.Abs(float64(got[i])-want[i]/math.Sqrt(norm)) > 1e-6 {
			t.Fatalf("Mock(alpha) = %v, want %v / %v", got, want, math.Sqrt(norm))
		}
	}
	again, _ := Builtin{}.Embed(context.Background(), []string{"alpha", "beta"}, 4)
	if fmt.Sprint(again[0]) != fmt.Sprint(got) || fmt.Sprint(again[1]) == fmt.Sprint(got) {
		t.Fatalf("Builtin is not deterministic per text: %v", again)
	}
	l := 0.0
	for _, x := range again[1] {
		l += float64(x) * float64(x)
	}
	if math.Abs(l-1) > 1e-5 {
		t.Fatalf("not normalised: |v|² = %v", l)
	}
}

// TestHTTPAgainstStub runs the OpenAI-compatible embedder against a local
// stub: the request shape, the bearer key, reordered answers by index,
// normalisation, and the failures (status, short answer, wrong dimension).
func TestHTTPAgainstStub(t *testing.T) {
	var seen []map[string]any
	var auth []string
	mode := "ok"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/embeddings" || r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		var req map[string]any
		_ = json.NewDecoder(r.Body).Decode(&req)
		seen = append(seen, req)
		auth = append(auth, r.Header.Get("Authorization"))
		switch mode {
		case "500":
			w.WriteHeader(500)
			return
		case "short":
			fmt.Fprint(w, `{"data":[{"index":0,"embedding":[3,4]}]}`)
			return
		case "dim":
			fmt.Fprint(w, `{"data":[{"index":0,"embedding":[1,2,3]},{"index":1,"embedding":[1,0]}]}`)
			return
		}
		fmt.Fprint(w, `{"data":[{"index":1,"embedding":[0,2]},{"index":0,"embedding":[3,4]}]}`)
	}))
	defer srv.Close()
	env := map[string]string{"OMNIGRAPH_EMBED_PROVIDER": "openai-compatible", "OMNIGRAPH_EMBED_BASE_URL": srv.URL + "/v1/", "OMNIGRAPH_EMBED_MODEL": "m-1", "OMNIGRAPH_EMBED_API_KEY": "sk-test"}
	e, err := FromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if e.Model() != "m-1" {
		t.Fatalf("model %q", e.Model())
	}
	vs, err := e.Embed(context.Background(), []string{"a", "b"}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(vs) != "[[0.6 0.8] [0 1]]" {
		t.Fatalf("vectors %v", vs)
	}
	if seen[0]["model"] != "m-1" || seen[0]["dimensions"] != 2.0 || fmt.Sprint(seen[0]["input"]) != "[a b]" || auth[0] != "Bearer sk-test" {
		t.Fatalf("request %v auth %q", seen[0], auth[0])
	}
	for _, m := range []string{"500", "short", "dim"} {
		mode = m
		_, err := e.Embed(context.Background(), []string{"a", "b"}, 2)
		if !errors.Is(err, ErrEmbed) || strings.Contains(err.Error(), "sk-test") {
			t.Errorf("%s: %v", m, err)
		}
	}
}

func TestFromEnv(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{nil, "builtin mock"},
		{map[string]string{"OMNIGRAPH_EMBED_MODEL": "test-model-a"}, "builtin test-model-a"},
		{map[string]string{"OMNIGRAPH_EMBEDDINGS_MOCK": "1", "OMNIGRAPH_EMBED_PROVIDER": "openai"}, "builtin mock"},
		{map[string]string{"OMNIGRAPH_EMBED_PROVIDER": "openai", "OPENAI_API_KEY": "k"}, "http text-embedding-3-large https://api.openai.com/v1"},
		{map[string]string{"OMNIGRAPH_EMBED_PROVIDER": "openai-compatible", "OPENROUTER_API_KEY": "k"}, "http openai/text-embedding-3-large https://openrouter.ai/api/v1"},
		{map[string]string{"OMNIGRAPH_EMBED_PROVIDER": "openai-compatible"}, "error"},
		{map[string]string{"OMNIGRAPH_EMBED_PROVIDER": "gemini"}, "error"},
	} {
		e, err := FromEnv(func(k string) string { return tc.env[k] })
		got := "error"
		switch x := e.(type) {
		case Builtin:
			got = "builtin " + x.Model()
		case *HTTP:
			got = "http " + x.Model() + " " + x.BaseURL
		}
		if got != tc.want || (got == "error") != (err != nil) {
			t.Errorf("%v: %s (%v), want %s", tc.env, got, err, tc.want)
		}
		if err != nil && !errors.Is(err, ErrEmbed) {
			t.Errorf("%v: unclassified %v", tc.env, err)
		}
	}
}
