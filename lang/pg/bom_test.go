package pg

import (
	"errors"
	"strings"
	"testing"
)

// TestCompileAcceptsLeadingBOM pins the rule that a UTF-8 byte order mark at
// the start of a .pg file is skipped: the schema compiles to the same identity
// as without it, the kept source has no BOM, and error positions count from
// the byte after it.
func TestCompileAcceptsLeadingBOM(t *testing.T) {
	src := "node Person {\n  name: String @key\n}\n"
	plain, err := Compile(src)
	if err != nil {
		t.Fatal(err)
	}
	withBOM, err := Compile("\ufeff" + src)
	if err != nil {
		t.Fatalf("schema with a BOM: %v", err)
	}
	if withBOM.Identity != plain.Identity {
		t.Fatalf("identity with BOM %s, without %s", withBOM.Identity, plain.Identity)
	}
	if withBOM.Source != src {
		t.Fatalf("kept source %q, want it without the BOM", withBOM.Source)
	}
	_, err = CompileFile("my.pg", "\ufeffnode X {\n  name: Strng @key\n}\n")
	var pe *Error
	if !errors.As(err, &pe) || pe.Line != 2 || pe.Col != 9 || !strings.HasPrefix(err.Error(), "my.pg:2:9: unknown type") {
		t.Fatalf("error in a BOM file = %v, want my.pg:2:9: unknown type ...", err)
	}
	// Only a leading BOM is skipped; one in the middle is still refused.
	if _, err := Compile("node X {\n\ufeff name: String @key\n}\n"); err == nil {
		t.Fatal("a BOM inside the file was accepted")
	}
}
