// Package all registers every storage backend with backend.Open. Import it
// for its side effect.
package all

import (
	_ "github.com/omnigraph-go/omnigraph/backend/local" // file:// and plain paths
	_ "github.com/omnigraph-go/omnigraph/backend/mem"   // mem://
)
