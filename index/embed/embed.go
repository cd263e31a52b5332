// Package embed turns text into vectors for Vector properties declared with
// @embed and for nearest($x.v, "text"). An Embedder is either the built-in
// deterministic one (Builtin: offline, the original system's "mock"
// provider, bit for bit) or an OpenAI-compatible HTTP service (HTTP).
// FromEnv picks one from the OMNIGRAPH_EMBED_* variables.
//
// Every vector an Embedder returns is L2-normalised and has the requested
// dimension.
package embed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"time"
)

// ErrEmbed classifies every embedding failure (configuration, transport,
// a malformed or short answer).
var ErrEmbed = errors.New("embedding failed")

// Embedder embeds texts into vectors of dimension dim.
type Embedder interface {
	// Model names the model; a property's @embed(…, model="m") must match it.
	Model() string
	Embed(ctx context.Context, texts []string, dim int) ([][]float32, error)
}

// Builtin is the deterministic offline embedder: the original's mock
// provider (FNV-1a 64 of the text seeds xorshift64; each component is
// 2·(x / 2^64−1) − 1; the vector is L2-normalised). The same text always
// gives the same vector, on every machine.
type Builtin struct {
	ModelName string // "" reads as "mock"
}

// Model implements Embedder.
func (b Builtin) Model() string {
	if b.ModelName == "" {
		return "mock"
	}
	return b.ModelName
}

// Embed implements Embedder.
func (b Builtin) Embed(_ context.Context, texts []string, dim int) ([][]float32, error) {
	if dim < 1 {
		return nil, fmt.Errorf("%w: dimension %d", ErrEmbed, dim)
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = Mock(t, dim)
	}
	return out, nil
}

// Mock is the built-in embedding of text with dimension dim.
func Mock(text string, dim int) []float32 {
	seed := uint64(14695981039346656037)
	for i := 0; i < len(text); i++ {
		seed ^= uint64(text[i])
		seed *= 1099511628211
	}
	v := make([]float32, dim)
	for i := range v {
		seed ^= seed << 13
		seed ^= seed >> 7
		seed ^= seed << 17
		ratio := float32(float64(seed) / float64(math.MaxUint64))
		v[i] = ratio*2 - 1
	}
	return Normalize(v)
}

// Normalize scales v to unit L2 length in place (a zero vector stays zero)
// and returns it.
func Normalize(v []float32) []float32 {
	s := 0.0
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	n := float32(math.Sqrt(s))
	if n > 1.1920929e-07 {
		for i := range v {
			v[i] /= n
		}
	}
	return v
}

// HTTP is an OpenAI-compatible embedding service: POST {BaseURL}/embeddings
// with {"model", "input": [texts], "dimensions"} and a bearer key; the
// answer's data[i].embedding is the vector of input i.
type HTTP struct {
	BaseURL   string
	ModelName string
	APIKey    string
	Client    *http.Client // nil: a client with a 30 s timeout
}

// Model implements Embedder.
func (h *HTTP) Model() string { return h.ModelName }

// Embed implements Embedder.
func (h *HTTP) Embed(ctx context.Context, texts []string, dim int) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	body, err := json.Marshal(map[string]any{"model": h.ModelName, "input": texts, "dimensions": dim})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEmbed, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(h.BaseURL, "/")+"/embeddings", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%w: bad base URL: %w", ErrEmbed, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if h.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+h.APIKey)
	}
	c := h.Client
	if c == nil {
		c = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: the embedding service did not answer: %w", ErrEmbed, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("%w: reading the answer: %w", ErrEmbed, err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%w: the embedding service answered HTTP %d", ErrEmbed, resp.StatusCode)
	}
	var ans struct {
		Data []struct {
			Index     *int      `json:"index"`
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(data, &ans); err != nil {
		return nil, fmt.Errorf("%w: the answer is not an embeddings response: %w", ErrEmbed, err)
	}
	if len(ans.Data) != len(texts) {
		return nil, fmt.Errorf("%w: asked for %d embeddings, got %d", ErrEmbed, len(texts), len(ans.Data))
	}
	out := make([][]float32, len(texts))
	for i, d := range ans.Data {
		at := i
		if d.Index != nil {
			at = *d.Index
		}
		if at < 0 || at >= len(out) || out[at] != nil {
			return nil, fmt.Errorf("%w: the answer's index %d is out of place", ErrEmbed, at)
		}
		if len(d.Embedding) != dim {
			return nil, fmt.Errorf("%w: model %q returned %d dimensions, the property has %d", ErrEmbed, h.ModelName, len(d.Embedding), dim)
		}
		out[at] = Normalize(d.Embedding)
	}
	return out, nil
}

// Defaults of the OpenAI-compatible providers.
const (
	DefaultOpenRouterURL   = "https://openrouter.ai/api/v1"
	DefaultOpenRouterModel = "openai/text-embedding-3-large"
	DefaultOpenAIURL       = "https://api.openai.com/v1"
	DefaultOpenAIModel     = "text-embedding-3-large"
)

// FromEnv builds the configured embedder. getenv is os.Getenv in
// production. Variables:
//
//   - OMNIGRAPH_EMBEDDINGS_MOCK=1 or OMNIGRAPH_EMBED_PROVIDER=mock, or no
//     OMNIGRAPH_EMBED_PROVIDER at all: the built-in embedder (model
//     OMNIGRAPH_EMBED_MODEL, default "mock");
//   - OMNIGRAPH_EMBED_PROVIDER=openai-compatible (OpenRouter by default)
//     or openai: HTTP, with OMNIGRAPH_EMBED_BASE_URL and
//     OMNIGRAPH_EMBED_MODEL overriding the provider's defaults and the key
//     from OMNIGRAPH_EMBED_API_KEY, else OPENROUTER_API_KEY or
//     OPENAI_API_KEY (openai: OPENAI_API_KEY).
func FromEnv(getenv func(string) string) (Embedder, error) {
	get := func(k string) string { return strings.TrimSpace(getenv(k)) }
	if m := get("OMNIGRAPH_EMBEDDINGS_MOCK"); m != "" && m != "0" && !strings.EqualFold(m, "false") {
		return Builtin{ModelName: get("OMNIGRAPH_EMBED_MODEL")}, nil
	}
	var base, model string
	var keys []string
	switch p := get("OMNIGRAPH_EMBED_PROVIDER"); p {
	case "", "mock", "builtin":
		return Builtin{ModelName: get("OMNIGRAPH_EMBED_MODEL")}, nil
	case "openai-compatible":
		base, model, keys = DefaultOpenRouterURL, DefaultOpenRouterModel, []string{"OMNIGRAPH_EMBED_API_KEY", "OPENROUTER_API_KEY", "OPENAI_API_KEY"}
	case "openai":
		base, model, keys = DefaultOpenAIURL, DefaultOpenAIModel, []string{"OMNIGRAPH_EMBED_API_KEY", "OPENAI_API_KEY"}
	default:
		return nil, fmt.Errorf("%w: OMNIGRAPH_EMBED_PROVIDER=%q is not a provider; use mock, openai-compatible or openai", ErrEmbed, p)
	}
	if v := get("OMNIGRAPH_EMBED_BASE_URL"); v != "" {
		base = v
	}
	if v := get("OMNIGRAPH_EMBED_MODEL"); v != "" {
		model = v
	}
	h := &HTTP{BaseURL: base, ModelName: model}
	for _, k := range keys {
		if v := get(k); v != "" {
			h.APIKey = v
			break
		}
	}
	if h.APIKey == "" {
		return nil, fmt.Errorf("%w: %s is required for the %s embedding provider", ErrEmbed, strings.Join(keys, " or "), get("OMNIGRAPH_EMBED_PROVIDER"))
	}
	return h, nil
}
