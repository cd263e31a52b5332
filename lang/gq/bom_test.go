package gq

import "testing"

// TestParseAcceptsLeadingBOM pins the rule that a UTF-8 byte order mark at
// the start of a .gq file is skipped, and only there.
func TestParseAcceptsLeadingBOM(t *testing.T) {
	f, err := Parse("\ufeffquery q() {\n  match { $p: Person }\n  return { $p.name }\n}\n")
	if err != nil {
		t.Fatalf("query with a BOM: %v", err)
	}
	if len(f.Queries) != 1 || f.Queries[0].Name != "q" {
		t.Fatalf("parsed %+v, want one query q", f.Queries)
	}
	if _, err := Parse("query q() {\ufeff match { $p: Person } return { $p.name } }"); err == nil {
		t.Fatal("a BOM inside the query was accepted")
	}
}
