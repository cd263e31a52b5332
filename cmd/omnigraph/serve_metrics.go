package main

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/metrics"
	"github.com/omnigraph-go/omnigraph/clusterlock"
	"github.com/omnigraph-go/omnigraph/server"
)

// serveMetrics is the one registry of a serve process: the server's
// request metrics, the storage wrapper's, the cluster lock's gauges, the
// Go runtime and process collectors.
type serveMetrics struct {
	reg     *prometheus.Registry
	storage *metrics.Collectors
}

func newServeMetrics() (*serveMetrics, error) {
	reg := server.NewRegistry()
	st, err := metrics.NewCollectors(reg)
	if err != nil {
		return nil, err
	}
	return &serveMetrics{reg: reg, storage: st}, nil
}

// wrap records every storage request of a served graph.
func (m *serveMetrics) wrap(s backend.StorageAdapter) backend.StorageAdapter {
	if m == nil {
		return s
	}
	return m.storage.Wrap(s)
}

// lockGauges registers the writer lock gauges of graph id: held (0/1),
// and for a leased lock the seconds since its last answered heartbeat and
// the lease's length. held is cleared when the lock is released.
func (m *serveMetrics) lockGauges(id string, lease *clusterlock.Lease, held *atomic.Bool) {
	if m == nil {
		return
	}
	labels := prometheus.Labels{"graph": id}
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "omnigraph_cluster_lock_held", Help: "1 while this server holds the graph's writer lock, else 0.", ConstLabels: labels,
	}, func() float64 {
		if !held.Load() || (lease != nil && lease.Context().Err() != nil) {
			return 0
		}
		return 1
	}))
	if lease == nil {
		return
	}
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "omnigraph_cluster_lock_heartbeat_age_seconds", Help: "Seconds since the send time of the writer lock's last answered heartbeat (the lease lapses past two thirds of its length).", ConstLabels: labels,
	}, func() float64 { return time.Since(lease.LastAnswered()).Seconds() }))
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "omnigraph_cluster_lock_lease_seconds", Help: "The writer lock's lease length.", ConstLabels: labels,
	}, func() float64 { return lease.Duration().Seconds() }))
}
