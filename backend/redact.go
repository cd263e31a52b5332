package backend

import (
	"regexp"
	"strings"
)

// secretPatterns match credential material that SDK errors or URLs may carry:
// URL userinfo passwords, signed-URL and SAS query parameters, account keys
// in connection strings, and bearer tokens.
var secretPatterns = []*regexp.Regexp{
	regexp.MustCompile(`(?i)(://[^:/@\s]+:)[^@/\s]+@`),
	regexp.MustCompile(`(?i)((?:^|[?&;,\s"'])(?:sig|signature|x-amz-signature|x-amz-credential|x-amz-security-token|x-goog-signature|x-goog-credential|se|sp|sv|st|skoid|sktid|token|access_token|secret|key|password|sas)=)[^&\s"']+`),
	regexp.MustCompile(`(?i)(AccountKey=)[^;\s"']+`),
	regexp.MustCompile(`(?i)(SharedAccessSignature=)[^;\s"']+`),
	regexp.MustCompile(`(?i)(Authorization:\s*)\S+(\s+\S+)?`),
	regexp.MustCompile(`(?i)(Credential=)[^,\s]+`),
}

// A query-parameter pattern matches only a whole parameter name (at the
// start, or after ?, &, ;, a comma, a quote or a space), so a harmless
// parameter that ends in one of the names, such as key_child_coexist=true
// ("...st=true"), is kept.

// bearerPattern is a bearer credential: the word Bearer and what follows.
// What follows is redacted only when it can be a secret (isWord), so the
// messages "missing bearer token" and "invalid bearer token" keep their
// last word.
var bearerPattern = regexp.MustCompile(`(?i)(Bearer\s+)(\S+)`)

// isWord reports whether s is a word of prose, not a credential: letters
// only and shorter than any token this project issues or accepts as
// strong (a secret of fewer than 20 letters and no digit or symbol).
func isWord(s string) bool {
	if len(s) >= 20 {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') {
			return false
		}
	}
	return true
}

// Redact removes credential material from s, never words: "Bearer
// ya29.secret" loses the secret, "missing bearer token" keeps "token".
// Every error an adapter returns passes its cause through Redact (see
// Error.Error).
func Redact(s string) string {
	for _, re := range secretPatterns {
		s = re.ReplaceAllString(s, "${1}REDACTED")
	}
	return bearerPattern.ReplaceAllStringFunc(s, func(m string) string {
		sub := bearerPattern.FindStringSubmatch(m)
		if isWord(strings.TrimRight(sub[2], ".,;:)'\"")) {
			return m
		}
		return sub[1] + "REDACTED"
	})
}
