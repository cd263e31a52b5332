package text

import (
	"math"
	"slices"
	"testing"
)

func TestTokens(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"Introduction to Machine Learning", []string{"introduct", "machin", "learn"}},
		{"Deep learning uses neural networks with many layers to learn representations", []string{"deep", "learn", "use", "neural", "network", "mani", "layer", "learn", "represent"}},
		{"Reinforcement learning trains agents through reward and punishment signals", []string{"reinforc", "learn", "train", "agent", "reward", "punish", "signal"}},
		{"Café, naïve—résumé!", []string{"cafe", "naiv", "resume"}},
		{"the of and", nil},
		{"x aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa y", []string{"x", "y"}}, // a 41-byte token is dropped
	} {
		if got := Tokens(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("Tokens(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := Terms("learning learn LEARNED"); !slices.Equal(got, []string{"learn"}) {
		t.Errorf("Terms = %q", got)
	}
}

func TestLevenshtein(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"abc", "", 3}, {"kitten", "sitting", 3}, {"introductio", "introduct", 2}, {"ab", "ba", 2}, {"héllo", "hello", 1}} {
		if got := Levenshtein(tc.a, tc.b); got != tc.d {
			t.Errorf("Levenshtein(%q,%q) = %d, want %d", tc.a, tc.b, got, tc.d)
		}
	}
	if !MatchAny(Tokens("Introduction"), Terms("Introductio"), 2) || MatchAny(Tokens("Introduction"), Terms("Introductio"), 1) {
		t.Error("fuzzy: introductio is 2 edits from introduct")
	}
}

// TestBM25 checks Score against the formula worked by hand on three
// documents.
func TestBM25(t *testing.T) {
	docs := [][]string{Tokens("red apple"), Tokens("green apple pie apple"), Tokens("blue sky")}
	c := NewCorpus()
	for _, d := range docs {
		c.Add(d)
	}
	// N=3, lengths 2,4,2: avgdl = 8/3. "appl" is in 2 docs: idf = ln(1 + (3-2+0.5)/(2+0.5)) = ln(1.6).
	idf := math.Log(1.6)
	want0 := idf * 1 * 2.2 / (1 + 1.2*(0.25+0.75*2/(8.0/3)))
	want1 := idf * 2 * 2.2 / (2 + 1.2*(0.25+0.75*4/(8.0/3)))
	if got := c.Score(docs[0], Terms("apple")); math.Abs(got-want0) > 1e-12 {
		t.Errorf("doc0 = %v, want %v", got, want0)
	}
	if got := c.Score(docs[1], Terms("apples")); math.Abs(got-want1) > 1e-12 {
		t.Errorf("doc1 = %v, want %v", got, want1)
	}
	if got := c.Score(docs[2], Terms("apple")); got != 0 {
		t.Errorf("doc2 = %v, want 0", got)
	}
	// Two terms add: "sky" is in one doc: idf = ln(1 + 2.5/1.5).
	want2 := math.Log(1+2.5/1.5) * 2.2 / (1 + 1.2*(0.25+0.75*2/(8.0/3)))
	if got := c.Score(docs[2], Terms("apple sky")); math.Abs(got-want2) > 1e-12 {
		t.Errorf("doc2 two terms = %v, want %v", got, want2)
	}
}
