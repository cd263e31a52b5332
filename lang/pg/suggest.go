package pg

import (
	"strconv"
	"strings"

	"github.com/omnigraph-go/omnigraph/text"
)

// suggest returns the candidate closest to word, or "" when none is close
// enough to be a likely typo. A case-insensitive match always wins.
func suggest(word string, candidates []string) string {
	best, bestD := "", len(word)/3+2
	for _, c := range candidates {
		if strings.EqualFold(c, word) {
			return c
		}
		if d := editDistance(strings.ToLower(word), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

func didYouMean(word string, candidates []string) string {
	if s := suggest(word, candidates); s != "" {
		return "did you mean " + s + "?"
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 { // long names are never typos of each other worth suggesting
		if a == b {
			return 0
		}
		return 1 << 20
	}
	return text.Levenshtein(a, b)
}

// formatNumber renders a float without exponent so the .pg lexer reads it
// back ("1.5", "-3", "100000000000000000000").
func formatNumber(f float64) string {
	return strconv.FormatFloat(f, 'f', -1, 64)
}
