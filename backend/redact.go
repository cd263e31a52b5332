package backend

import (
	"regexp"
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
	regexp.MustCompile(`(?i)(Bearer\s+)\S+`),
	regexp.MustCompile(`(?i)(Credential=)[^,\s]+`),
}

// A query-parameter pattern matches only a whole parameter name (at the
// start, or after ?, &, ;, a comma, a quote or a space), so a harmless
// parameter that ends in one of the names, such as key_child_coexist=true
// ("...st=true"), is kept.

// Redact removes credential material from s. Every error an adapter returns
// passes its cause through Redact (see Error.Error).
func Redact(s string) string {
	for _, re := range secretPatterns {
		s = re.ReplaceAllString(s, "${1}REDACTED")
	}
	return s
}
