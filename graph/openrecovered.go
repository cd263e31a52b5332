package graph

import "github.com/omnigraph-go/omnigraph/recovery"

// noteOpenRecovered keeps the audit rows of the interrupted writes the
// open-time sweep resolved, for the caller to report (a server logs one
// line per write and counts them).
func (g *Graph) noteOpenRecovered(rep *recovery.Report) {
	if rep == nil {
		return
	}
	for _, o := range rep.Outcomes {
		if o.Record != nil {
			g.openRecovered = append(g.openRecovered, *o.Record)
		}
	}
}

// OpenRecovered returns the audit rows of the interrupted writes this
// handle's read-write Open rolled forward, rolled back or discarded, in
// the order the sweep resolved them (none: nil).
func (g *Graph) OpenRecovered() []recovery.Record {
	return append([]recovery.Record(nil), g.openRecovered...)
}
