// Package wire holds the wire-level rules for HTTP-based stores and the
// fault proxy they need. Any backend author can import it: put the proxy in
// front of the store's endpoint, point the adapter at the proxy, and call
// Run from a test.
//
//	func TestWire(t *testing.T) {
//		wire.Run(t, wire.Spec{
//			Open: func(t *testing.T) (backend.StorageAdapter, *wire.Proxy) {
//				p := wire.NewProxy(t, "http://127.0.0.1:9000")
//				s := mystore.New(mystore.Config{Endpoint: p.URL})
//				return backend.WithPrefix(s, uniquePrefix(t)), p
//			},
//			IsWrite:  wire.IsMethod(http.MethodPut),
//			IsRead:   wire.IsMethod(http.MethodGet),
//			Throttle: wire.Rule{Status: http.StatusServiceUnavailable},
//		})
//	}
//
// The rules (Cases) count the requests the proxy saw: a conditional request
// is sent exactly once and a lost answer after it took effect is Unknown;
// reads and writes of fresh keys are retried within 3 retries after server
// errors plus 3 after throttles; throttling (HTTP 429, 503, the store's own
// SlowDown) that outlasts the budget is Transient. The in-memory suite
// (package conformance) checks everything else.
package wire
