package pg

import (
	"strconv"

	"github.com/omnigraph-go/omnigraph/text"
)

// suggest returns the candidate closest to word, or "" when none is close
// enough to be a likely typo (text.Closest).
func suggest(word string, candidates []string) string { return text.Closest(word, candidates) }

func didYouMean(word string, candidates []string) string {
	if s := suggest(word, candidates); s != "" {
		return "did you mean " + s + "?"
	}
	return ""
}

// formatNumber renders a float without exponent so the .pg lexer reads it
// back ("1.5", "-3", "100000000000000000000").
func formatNumber(f float64) string {
	return strconv.FormatFloat(f, 'f', -1, 64)
}
