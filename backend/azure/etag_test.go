package azure

import (
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
)

// TestListedETagIsTheHeaderToken: List Blobs prints an ETag bare
// (<Etag>0x8D...</Etag>) and the headers of a write or a HEAD quote it;
// both give one token, so a listed version swaps like any other.
func TestListedETagIsTheHeaderToken(t *testing.T) {
	bare, quoted, weak := azcore.ETag("0x8DC0FFEE"), azcore.ETag(`"0x8DC0FFEE"`), azcore.ETag(`W/"0x8DC0FFEE"`)
	want := attrs("k", 1, &quoted, nil).Version
	if want != `"0x8DC0FFEE"` {
		t.Fatalf("header token = %q", want)
	}
	for _, e := range []azcore.ETag{bare, weak} {
		if got := attrs("k", 1, &e, nil).Version; got != want {
			t.Fatalf("token of %q = %q, want %q", e, got, want)
		}
	}
}
