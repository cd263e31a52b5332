package main

import (
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/metrics"
	"github.com/omnigraph-go/omnigraph/clusterlock"
	"github.com/omnigraph-go/omnigraph/recovery"
	"github.com/omnigraph-go/omnigraph/server"
)

// serveMetrics is the one registry of a serve process: the server's
// request metrics, the storage wrapper's, the cluster lock's gauges, the
// Go runtime and process collectors.
type serveMetrics struct {
	reg        *prometheus.Registry
	storage    *metrics.Collectors
	recoveries *prometheus.CounterVec
}

func newServeMetrics() (*serveMetrics, error) {
	reg := server.NewRegistry()
	st, err := metrics.NewCollectors(reg)
	if err != nil {
		return nil, err
	}
	rec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "omnigraph_recoveries_total",
		Help: "Interrupted writes the open-time recovery resolved, by what it did (RolledForward, RolledBack, Discarded, OrphanDiscarded).",
	}, []string{"outcome"})
	if err := reg.Register(rec); err != nil {
		return nil, err
	}
	for _, k := range []recovery.Kind{recovery.RolledForward, recovery.RolledBack, recovery.Discarded, recovery.OrphanDiscarded} {
		rec.WithLabelValues(string(k))
	}
	return &serveMetrics{reg: reg, storage: st, recoveries: rec}, nil
}

// recovered logs one line per interrupted write the open of graph id
// resolved (its writer, what recovery did, the commit kept or made) and
// counts it; keys and paths are never named.
func (m *serveMetrics) recovered(log *slog.Logger, id string, recs []recovery.Record) {
	for _, r := range recs {
		attrs := []any{"graph", id, "operation_id", r.OperationID, "intent", r.WriterKind,
			"outcome", string(r.RecoveryKind), "classification", string(r.Classification)}
		if r.CommitID != "" {
			attrs = append(attrs, "commit_id", r.CommitID)
		}
		log.Info("recovered an interrupted write", attrs...)
		if m != nil {
			m.recoveries.WithLabelValues(string(r.RecoveryKind)).Inc()
		}
	}
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
