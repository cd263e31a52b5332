// Package conformance is the shared test suite every backend.StorageAdapter
// must pass. Each rule written in the StorageAdapter method docs has a named
// subtest here, so "passes conformance" means "keeps the contract".
//
// A backend author proves a store in a few lines of its own test file:
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, func(t *testing.T) backend.StorageAdapter {
//			s, err := mystore.Open(t.Context(), t.TempDir())
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// The Maker is called once per subtest and must return an empty namespace:
// a new directory, a new in-memory store, or for a shared bucket a unique
// prefix wrapped with backend.WithPrefix (and a t.Cleanup that deletes it).
// Subtests are named after the rule they check (PutIfAbsentRace,
// ListOrderAndPagination, ...), so `go test -run 'TestConformance/Exists'`
// reruns one rule.
//
// Subtests that need a capability the store does not declare in
// Capabilities() skip with the reason; capabilities a store does declare are
// held to their full meaning. Run ends with a summary (t.Log) of the rules
// that ran, passed, failed and were skipped, with each skip's reason.
//
// The races run 16 writers for 50 rounds by default (WithRaceSize), within a
// race budget per rule (WithRaceBudget, default 2 minutes): a slow but correct
// store that runs out of budget passes with the rounds it finished, logged.
// The live rules (Probes) need no *testing.T; `omnigraph storage check` runs
// the same code against a real bucket. On an in-memory or local store the
// whole suite takes a few seconds.
//
// Calls cancelled while they run must return within a grace
// (WithCancelGrace, default 10 s) and leave nothing or the whole object
// (CancelInFlight). A store the backend refuses (WithDeny: wrong
// credentials, no permission) must fail every method loudly
// (CredentialFailuresAreLoud; skipped, saying so, without WithDeny).
// Conditional writes are also made with 17 MiB bodies
// (WithLargeConditionalSize), above the S3 adapter's multipart threshold.
// The wire-level rules for HTTP stores, and the fault proxy they need, are
// in package conformance/wire.
//
// Wrappers (prefixing, counting, fault injection with no faults armed) run the
// same suite: a wrapper that changes behaviour when nothing is injected is a
// bug.
package conformance
