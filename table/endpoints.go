package table

import (
	"hash/maphash"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
)

// Endpoints interns the two endpoint columns of the rows a bulk writer
// encodes, so the adjacency index of the version that stages those
// fragments is built from memory instead of reading the fragments back
// and interning them again: the distinct values once, and each row's two
// dense numbers (8 bytes a row). A loader feeds it every batch of rows it
// hands its fragment writers, in the same order (Add, typically on a
// goroutine of its own beside the encoder), then gives each closed writer
// its share (Track). One goroutine at a time calls Add; once Track is
// done it is read-only.
//
// The index build uses it only when it is exactly right: every fragment
// the build would read was tracked by the same Endpoints, and its rows are
// all live (a fragment rewritten without some rows is a new, untracked
// writer). Otherwise the build reads the fragments as before; the file is
// the same either way (TestTrackedEndpointsBuildTheSameIndex).
type Endpoints struct {
	from, to string
	in       interner
	// src and dst are every row's dense numbers, in the order added (-1
	// for both when either is null).
	src, dst []int32
}

// NewEndpoints tracks the string columns from and to.
func NewEndpoints(from, to string) *Endpoints {
	return &Endpoints{from: from, to: to, in: interner{seed: maphash.MakeSeed()}}
}

// trackedEnds is one fragment's share of an Endpoints: each row's dense
// source and destination (-1 for both when either is null).
type trackedEnds struct {
	e        *Endpoints
	src, dst []int32
}

// Add interns the endpoints of rec's rows, after the rows added before.
func (e *Endpoints) Add(rec arrow.Record) error {
	fi, ti, err := adjacencyColumns(rec.Schema(), e.from, e.to)
	if err != nil {
		return err
	}
	s, ok1 := rec.Column(fi).(stringArray)
	d, ok2 := rec.Column(ti).(stringArray)
	if !ok1 || !ok2 {
		return errorf(ErrInvalid, "track endpoints: an endpoint column is not a string column")
	}
	n := int(rec.NumRows())
	e.src = slices.Grow(e.src, n)
	e.dst = slices.Grow(e.dst, n)
	nulls := s.NullN()+d.NullN() > 0
	for j := 0; j < n; j++ {
		if nulls && (s.IsNull(j) || d.IsNull(j)) {
			e.src, e.dst = append(e.src, -1), append(e.dst, -1)
			continue
		}
		e.src = append(e.src, e.in.intern(s.Value(j), true))
		e.dst = append(e.dst, e.in.intern(d.Value(j), true))
	}
	return nil
}

// Rows is the number of rows added.
func (e *Endpoints) Rows() int64 { return int64(len(e.src)) }

// Sort orders the values for the index build ahead of it (the build sorts
// them itself otherwise): a loader calls it after the last Add, on the
// goroutine that added, while other work goes on.
func (e *Endpoints) Sort() { e.in.sorted() }

// Track gives the closed writers fws, which hold exactly the rows added,
// in the order added, each its share: the build of the index of a version
// that stages them reads nothing back.
func (e *Endpoints) Track(fws ...*FragmentWriter) error {
	var rows int64
	for _, fw := range fws {
		if !fw.closed {
			return errorf(ErrInvalid, "track endpoints: a fragment writer is not closed")
		}
		if _, _, err := adjacencyColumns(fw.schema, e.from, e.to); err != nil {
			return err
		}
		rows += fw.rows
	}
	if rows != e.Rows() {
		return errorf(ErrInvalid, "track endpoints: the writers hold %d rows, %d were added", rows, e.Rows())
	}
	var at int64
	for _, fw := range fws {
		fw.track = &trackedEnds{e: e, src: e.src[at : at+fw.rows : at+fw.rows], dst: e.dst[at : at+fw.rows : at+fw.rows]}
		at += fw.rows
	}
	return nil
}

// Value returns the endpoint value of dense number d.
func (e *Endpoints) Value(d int32) string { return e.in.val(d) }

// Len is the number of distinct endpoint values interned.
func (e *Endpoints) Len() int { return e.in.n }

// Endpoints returns the dense source and destination of each row the
// writer wrote (-1 for both when either is null), nil when it does not
// track them. The slices are the writer's: read only.
func (fw *FragmentWriter) Endpoints() (src, dst []int32) {
	if fw.track == nil {
		return nil, nil
	}
	return fw.track.src, fw.track.dst
}

// Key returns the key column's value of row r of a closed writer (it
// decodes the key column: for error reports, not a loop).
func (fw *FragmentWriter) Key(r int64) (string, error) {
	col, err := fw.keyColumn()
	if err != nil {
		return "", err
	}
	if r < 0 || r >= int64(len(col)) {
		return "", errorf(ErrInvalid, "row %d of a fragment of %d rows", r, len(col))
	}
	return col[r], nil
}

// HeldBytes is the memory the tracked endpoints hold (capacities, not
// lengths): the rows' dense numbers, the interned values and their table.
func (e *Endpoints) HeldBytes() int64 {
	n := int64(cap(e.src)+cap(e.dst)) * 4
	return n + e.in.heldBytes()
}
