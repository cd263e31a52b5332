package pg

import (
	"strconv"
	"strings"
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

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 { // long names are never typos of each other worth suggesting
		if a == b {
			return 0
		}
		return 1 << 20
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// formatNumber renders a float without exponent so the .pg lexer reads it
// back ("1.5", "-3", "100000000000000000000").
func formatNumber(f float64) string {
	return strconv.FormatFloat(f, 'f', -1, 64)
}
