// Package all registers every storage backend with backend.Open. Import it
// for its side effect.
package all

import (
	_ "github.com/omnigraph-go/omnigraph/backend/local" // file:// and plain paths
	_ "github.com/omnigraph-go/omnigraph/backend/mem"   // mem://

	_ "github.com/omnigraph-go/omnigraph/backend/azure"   // az://container/prefix
	_ "github.com/omnigraph-go/omnigraph/backend/gcs"     // gs://bucket/prefix
	_ "github.com/omnigraph-go/omnigraph/backend/gocloud" // gocloud+mem://, gocloud+s3://
	_ "github.com/omnigraph-go/omnigraph/backend/s3"      // s3://bucket/prefix
)
