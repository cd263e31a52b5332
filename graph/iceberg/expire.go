package iceberg

// expireAll queues expiry for every table the retention's entries pin (a
// table no op touched still gets its metadata rewritten without the
// snapshots cleanup will make unreadable).
func (s *syncer) expireAll() {
	for _, e := range s.opts.Expire.Entries {
		for _, p := range e.Tables {
			s.table(p.Key)
		}
	}
}

// expire removes from m every snapshot whose table version the retention
// does not keep, except the head of a ref: cleanup then deletes only files
// no retained snapshot references. A snapshot whose commit cleanup did not
// walk (a deleted branch's, or history already pruned) is expired too.
// Parent ids may then name an expired snapshot, as Iceberg allows.
func expire(key string, m *metadata, r *Retention) int {
	heads := map[int64]bool{}
	for _, rf := range m.Refs {
		heads[rf.SnapshotID] = true
	}
	gone := map[int64]bool{}
	kept := m.Snapshots[:0]
	for _, sn := range m.Snapshots {
		keep := heads[sn.SnapshotID]
		if !keep {
			if e := r.Entries[sn.Summary[SummaryCommitID]]; e != nil && !e.Pruned {
				if p, ok := e.Pin(key); ok && r.Kept(p.Path, p.Branch, p.Version) {
					keep = true
				}
			}
		}
		if keep {
			kept = append(kept, sn)
		} else {
			gone[sn.SnapshotID] = true
		}
	}
	m.Snapshots = kept
	if len(gone) == 0 {
		return 0
	}
	log := m.SnapshotLog[:0]
	for _, l := range m.SnapshotLog {
		if !gone[l.SnapshotID] {
			log = append(log, l)
		}
	}
	m.SnapshotLog = log
	return len(gone)
}
