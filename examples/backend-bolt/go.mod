module example.com/omnigraph-bolt

go 1.26.0

require (
	github.com/omnigraph-go/omnigraph v0.0.0
	go.etcd.io/bbolt v1.5.0
)

require golang.org/x/sys v0.50.0 // indirect

replace github.com/omnigraph-go/omnigraph => ../..
