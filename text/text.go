// Package text is the text analysis and scoring behind the query language's
// full-text functions (search, fuzzy, match_text, bm25): a tokenizer with
// the original system's default analysis, Levenshtein distance and BM25.
//
// Analysis follows the original's default full-text index (Lance's
// "simple" tokenizer with its default filters), so the same words match:
//
//  1. split on every character that is not a Unicode letter or digit;
//  2. lower-case;
//  3. drop tokens longer than MaxTokenBytes bytes;
//  4. drop English stop words (the Snowball list, StopWords);
//  5. stem with the Snowball English (Porter2) stemmer;
//  6. fold Latin accents to ASCII (é → e).
//
// The package is pure: no I/O, no state.
package text

import (
	"math"
	"strings"
	"unicode"

	"github.com/blevesearch/snowballstem"
	"github.com/blevesearch/snowballstem/english"
)

// MaxTokenBytes is the longest token kept (longer ones are dropped, as the
// original's index does).
const MaxTokenBytes = 40

// BM25 parameters: the original's (Lance's) values.
const (
	K1 = 1.2
	B  = 0.75
)

// Tokens analyses s into its index terms, in order of appearance.
func Tokens(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		w = strings.ToLower(w)
		if len(w) > MaxTokenBytes || stopWords[w] {
			continue
		}
		out = append(out, Stem(w))
	}
	return out
}

// Stem is the Snowball English stem of a lower-case word, accents folded.
func Stem(w string) string {
	env := snowballstem.NewEnv(w)
	english.Stem(env)
	return fold(env.Current())
}

// Terms is Tokens without repeats, in order of first appearance: the terms
// of a query.
func Terms(s string) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range Tokens(s) {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// Levenshtein is the edit distance between a and b (insertions, deletions
// and substitutions of one character each; no transpositions), counted in
// runes.
func Levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// Closest returns the candidate closest to word by edit distance, or ""
// when none is close enough to be a likely typo (fewer than a third of
// word's length plus two edits). A case-insensitive match always wins.
// Names longer than 64 characters are never typos of each other worth
// suggesting (and would cost a quadratic distance).
func Closest(word string, candidates []string) string {
	best, bestD := "", len(word)/3+2
	lw := strings.ToLower(word)
	for _, c := range candidates {
		if strings.EqualFold(c, word) {
			return c
		}
		if len(word) > 64 || len(c) > 64 {
			continue
		}
		if d := Levenshtein(lw, strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// MatchAny reports whether some query term equals a document token (fuzzy
// with edits > 0: lies within edits of one).
func MatchAny(doc, query []string, edits int) bool {
	for _, q := range query {
		for _, d := range doc {
			if Within(q, d, edits) {
				return true
			}
		}
	}
	return false
}

// Within reports whether document term d matches query term q: equal, or
// with edits > 0 within edits of it (what MatchAny tests per pair; the
// full-text index tests its dictionary with it).
func Within(q, d string, edits int) bool {
	return q == d || (edits > 0 && abs(len(q)-len(d)) <= edits && Levenshtein(q, d) <= edits)
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// Corpus holds the statistics BM25 needs over one property of one node
// type's rows: the number of documents, their total length in tokens and,
// per term, how many documents contain it.
type Corpus struct {
	Docs   int
	Tokens int
	DF     map[string]int
}

// NewCorpus is an empty corpus.
func NewCorpus() *Corpus { return &Corpus{DF: map[string]int{}} }

// Add counts one document (its tokens, as Tokens returns them). A NULL
// value is not a document: do not add it.
func (c *Corpus) Add(doc []string) {
	c.Docs++
	c.Tokens += len(doc)
	seen := map[string]bool{}
	for _, t := range doc {
		if !seen[t] {
			seen[t] = true
			c.DF[t]++
		}
	}
}

// IDF is ln(1 + (N - n + 0.5) / (n + 0.5)) for a term in n of N documents.
func (c *Corpus) IDF(term string) float64 {
	n := float64(c.DF[term])
	return math.Log(1 + (float64(c.Docs)-n+0.5)/(n+0.5))
}

// Score is the BM25 score of a document for the query terms:
//
//	Σ_t IDF(t) · tf·(K1+1) / (tf + K1·(1 − B + B·|d|/avgdl))
//
// over the distinct query terms t, where tf is t's count in the document,
// |d| its length in tokens and avgdl the corpus's mean length. A document
// with no query term scores 0.
func (c *Corpus) Score(doc, terms []string) float64 {
	if c.Docs == 0 || c.Tokens == 0 {
		return 0
	}
	s := 0.0
	for _, t := range terms {
		tf := 0
		for _, d := range doc {
			if d == t {
				tf++
			}
		}
		s += c.TermScore(t, tf, len(doc))
	}
	return s
}

// TermScore is one term's part of Score for a document of docLen tokens
// holding it tf times (0 when tf is 0). Summing it over the distinct
// query terms in order is Score, to the bit: the full-text index scores
// its postings with it.
func (c *Corpus) TermScore(term string, tf, docLen int) float64 {
	if tf == 0 || c.Docs == 0 || c.Tokens == 0 {
		return 0
	}
	avgdl := float64(c.Tokens) / float64(c.Docs)
	f := float64(tf)
	return c.IDF(term) * f * (K1 + 1) / (f + K1*(1-B+B*float64(docLen)/avgdl))
}

// fold maps Latin letters with diacritics to ASCII.
func fold(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if f, ok := folds[r]; ok {
			b.WriteString(f)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

var folds = func() map[rune]string {
	m := map[rune]string{}
	for base, rs := range map[string]string{
		"a": "àáâãäåāăą", "c": "çćĉċč", "d": "ďđ", "e": "èéêëēĕėęě", "g": "ĝğġģ", "h": "ĥħ",
		"i": "ìíîïĩīĭįı", "j": "ĵ", "k": "ķ", "l": "ĺļľŀł", "n": "ñńņňŉ", "o": "òóôõöøōŏő",
		"r": "ŕŗř", "s": "śŝşšſ", "t": "ţťŧ", "u": "ùúûüũūŭůűų", "w": "ŵ", "y": "ýÿŷ", "z": "źżž",
		"ss": "ß", "ae": "æ", "oe": "œ", "th": "þ",
	} {
		for _, r := range rs {
			m[r] = base
		}
	}
	return m
}()

// StopWords is the Snowball English stop-word list (the original's index
// drops these words from documents and queries alike).
var StopWords = strings.Fields(`i me my myself we our ours ourselves you your yours yourself yourselves
he him his himself she her hers herself it its itself they them their theirs themselves what which who
whom this that these those am is are was were be been being have has had having do does did doing would
should could ought i'm you're he's she's it's we're they're i've you've we've they've i'd you'd he'd
she'd we'd they'd i'll you'll he'll she'll we'll they'll isn't aren't wasn't weren't hasn't haven't
hadn't doesn't don't didn't won't wouldn't shan't shouldn't can't cannot couldn't mustn't let's that's
who's what's here's there's when's where's why's how's a an the and but if or because as until while of
at by for with about against between into through during before after above below to from up down in
out on off over under again further then once here there when where why how all any both each few more
most other some such no nor not only own same so than too very`)

var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range StopWords {
		m[w] = true
	}
	return m
}()
