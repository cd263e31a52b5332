package main

import (
	"os"
	"testing"
)

// TestOpenAPIDocumentIsCommitted: sdk/openapi.json (what the TypeScript
// SDK is generated from) is exactly what 'omnigraph openapi' prints, so a
// route changed without 'scripts/sdk.sh generate' fails here (and the
// SDK's own drift check fails on the generated code).
func TestOpenAPIDocumentIsCommitted(t *testing.T) {
	want, err := os.ReadFile("../../sdk/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if got := mustCLI(t, "openapi"); got != string(want) {
		t.Fatalf("sdk/openapi.json is not the document the server serves: run scripts/sdk.sh generate and commit the result")
	}
	open := mustCLI(t, "openapi", "--open")
	if open == string(want) || len(open) == 0 {
		t.Fatalf("openapi --open prints the token document")
	}
}
