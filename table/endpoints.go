package table

import (
	"hash/maphash"
	"slices"
)

// Endpoints interns the two endpoint columns of the rows a bulk writer
// encodes (FragmentWriter.TrackEndpoints), so the adjacency index of the
// version that stages those fragments is built from memory instead of
// reading the fragments back and interning them again: the distinct values
// once, and each row's two dense numbers (8 bytes a row). The fragments of
// one table share one Endpoints and are written in order by one goroutine
// at a time; it is read-only once they are closed.
//
// The index build uses it only when it is exactly right: every fragment
// the build would read was tracked by the same Endpoints, and its rows are
// all live (a fragment rewritten without some rows is a new, untracked
// writer). Otherwise the build reads the fragments as before; the file is
// the same either way (TestTrackedEndpointsBuildTheSameIndex).
type Endpoints struct {
	from, to string
	in       interner
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

// TrackEndpoints makes the writer intern the endpoint columns of every row
// it writes into e. Call it before the first Write.
func (fw *FragmentWriter) TrackEndpoints(e *Endpoints) error {
	if fw.rows > 0 || fw.closed {
		return errorf(ErrInvalid, "track endpoints: the fragment writer already has rows")
	}
	fi, ti, err := adjacencyColumns(fw.schema, e.from, e.to)
	if err != nil {
		return err
	}
	fw.track, fw.trackCols = &trackedEnds{e: e}, [2]int{fi, ti}
	return nil
}

// trackRows interns the endpoints of rec's rows (called by Write).
func (fw *FragmentWriter) trackRows(cols [2]stringArray, n int) {
	t := fw.track
	t.src = slices.Grow(t.src, n)
	t.dst = slices.Grow(t.dst, n)
	s, d := cols[0], cols[1]
	nulls := s.NullN()+d.NullN() > 0
	for j := 0; j < n; j++ {
		if nulls && (s.IsNull(j) || d.IsNull(j)) {
			t.src, t.dst = append(t.src, -1), append(t.dst, -1)
			continue
		}
		t.src = append(t.src, t.e.in.intern(s.Value(j), true))
		t.dst = append(t.dst, t.e.in.intern(d.Value(j), true))
	}
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
