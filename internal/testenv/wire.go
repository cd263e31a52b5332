package testenv

import (
	"testing"

	"github.com/omnigraph-go/omnigraph/conformance/wire"
)

// The fault proxy and the wire rules live in the importable package
// conformance/wire; these names keep the in-tree tests' spelling.
type (
	// Proxy is wire.Proxy.
	Proxy = wire.Proxy
	// Request is wire.Request.
	Request = wire.Request
	// Rule is wire.Rule.
	Rule = wire.Rule
	// Wire is wire.Spec.
	Wire = wire.Spec
)

// NewProxy is wire.NewProxy.
func NewProxy(t testing.TB, target string) *Proxy { return wire.NewProxy(t, target) }

// RunWire is wire.Run.
func RunWire(t *testing.T, w Wire) { wire.Run(t, w) }

// IsMethod is wire.IsMethod.
func IsMethod(m string) func(Request) bool { return wire.IsMethod(m) }

// RoundTrips is wire.RoundTrips: the critical-path depth of requests the
// proxy saw.
func RoundTrips(reqs []Request) int { return wire.RoundTrips(reqs) }
