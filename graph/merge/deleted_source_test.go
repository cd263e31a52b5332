package merge_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/graph/merge"
	"github.com/omnigraph-go/omnigraph/manifest"
)

// TestMergeOfASourceDeletedMidMergeIsBranchNotFound: the source branch is
// deleted (its table versions with it) after the merge captured it. The
// merge is refused as branch-not-found, naming the branch and no table
// version or table branch, and nothing of it lands on the target (sim
// seeds 5 and 14 with concurrent batches: a merge beside a branch delete
// failed with "table: not found: version 18 of branch "b3@2""; seed 29 the
// same with the target deleted, TestMergeIntoATargetDeletedMidMerge...).
func TestMergeOfASourceDeletedMidMergeIsBranchNotFound(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	r.branch(t, "f", "main")
	r.load(t, "f", `{"type":"Person","data":{"handle":"dan","name":"Dan"}}`)
	r.load(t, "main", `{"type":"Person","data":{"handle":"eve","name":"Eve"}}`)
	before := headOf(t, r.g, "main")
	persons := strings.Join(rows(t, r.g, "main", "node:Person"), " ")
	opts := merge.WithAfterCapture(merge.Options{}, func() {
		if err := r.g.DeleteBranch(ctx, "f"); err != nil {
			t.Fatalf("delete f: %v", err)
		}
	})
	res, err := merge.Run(ctx, r.g, "f", "main", opts)
	if !errors.Is(err, manifest.ErrBranchNotFound) {
		t.Fatalf("got %+v, %v; want branch not found", res, err)
	}
	if msg := err.Error(); !strings.Contains(msg, `"f"`) || strings.Contains(msg, "f@") || strings.Contains(msg, "version") {
		t.Errorf("message %q: want the branch named, no table branch or version", msg)
	}
	if got := headOf(t, r.g, "main"); got != before {
		t.Errorf("main moved to %s", got)
	}
	if got := strings.Join(rows(t, r.g, "main", "node:Person"), " "); got != persons {
		t.Errorf("main persons %s, want %s", got, persons)
	}
}

// TestMergeIntoATargetDeletedMidMergeIsBranchNotFound: the target branch
// is deleted after the merge captured it (sim seed 29). The merge is
// refused as branch-not-found naming the target, the branch stays deleted,
// and the source is unchanged.
func TestMergeIntoATargetDeletedMidMergeIsBranchNotFound(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	r.branch(t, "f", "main")
	r.load(t, "f", `{"type":"Person","data":{"handle":"dan","name":"Dan"}}`)
	r.load(t, "main", `{"type":"Person","data":{"handle":"eve","name":"Eve"}}`)
	before := headOf(t, r.g, "main")
	opts := merge.WithAfterCapture(merge.Options{}, func() {
		if err := r.g.DeleteBranch(ctx, "f"); err != nil {
			t.Fatalf("delete f: %v", err)
		}
	})
	res, err := merge.Run(ctx, r.g, "main", "f", opts)
	if !errors.Is(err, manifest.ErrBranchNotFound) {
		t.Fatalf("got %+v, %v; want branch not found", res, err)
	}
	if msg := err.Error(); !strings.Contains(msg, `target "f"`) || strings.Contains(msg, "f@") || strings.Contains(msg, "version") {
		t.Errorf("message %q: want the target named, no table branch or version", msg)
	}
	if _, err := r.g.Snapshot(ctx, "f"); !errors.Is(err, manifest.ErrBranchNotFound) {
		t.Errorf("f after the merge: %v; want it deleted", err)
	}
	if got := headOf(t, r.g, "main"); got != before {
		t.Errorf("main moved to %s", got)
	}
}
