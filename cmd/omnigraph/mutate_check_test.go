package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestMutationIsCheckedBeforeTheLock: a mutation that can never run (a
// syntax error, an unknown property or type, a parameter of the wrong
// type) is refused by its own error while another writer holds the
// cluster lock, so it never takes the lock (on main it was refused with
// state_lock_held, and holding the lock while it failed turned a writer
// beside it away); a valid mutation still meets the lock, and nothing
// changed.
func TestMutationIsCheckedBeforeTheLock(t *testing.T) {
	url, store, _ := lockedGraph(t)
	before := rawLock(t, store)
	for _, args := range [][]string{
		{"-e", `update Person set { agee: 3 } where name = "ada"`},
		{"-e", `insert Robot { name: "r2" }`},
		{"-e", `insert Person { name: `},
		{"-e", `mutation m($n: String) { insert Person { name: $n } }`, "--params", `{"n": 5}`},
	} {
		code, out, errs := cli(t, append(append([]string{"mutate"}, args...), "--store", url, "--json")...)
		var je jsonError
		if code == exitOK || code == exitLockHeld || out != "" || json.Unmarshal([]byte(errs), &je) != nil || je.Error.Code == "state_lock_held" {
			t.Errorf("mutate %s while another writer holds the lock: exit %d, %q; want the mutation's own error", strings.Join(args, " "), code, errs)
		}
	}
	code, _, errs := cli(t, "mutate", "-e", `update Person set { age: 3 } where name = "ada"`, "--store", url)
	if code != exitLockHeld || !strings.HasPrefix(errs, "error: state_lock_held") {
		t.Fatalf("a valid mutation while locked: exit %d, %q; want state_lock_held", code, errs)
	}
	if after := rawLock(t, store); after != before {
		t.Fatal("the refused mutations changed the lock record")
	}
	if got := personNames(t, url); len(got) != 1 || got["ada"] != 1 {
		t.Fatalf("persons after the refused mutations: %v", got)
	}
}
