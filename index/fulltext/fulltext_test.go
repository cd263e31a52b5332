package fulltext

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/table"
	"github.com/omnigraph-go/omnigraph/text"
)

var schema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.BinaryTypes.String},
	{Name: "body", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

func rec(ids []string, bodies []*string) arrow.Record {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range ids {
		b.Field(0).(*array.StringBuilder).Append(ids[i])
		if bodies[i] == nil {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(*bodies[i])
		}
	}
	return b.NewRecordBatch()
}

func str(s string) *string { return &s }

// TestSearcherMatchesBruteForce: the index of a two-fragment table, then a
// third fragment it does not cover and a delete in a covered one, answers
// Match, Corpus and Top as text over the live rows does; a damaged
// file is no index.
func TestSearcherMatchesBruteForce(t *testing.T) {
	ctx := context.Background()
	store := mem.New()
	ds, err := table.Create(ctx, store, "t", schema, "id")
	if err != nil {
		t.Fatal(err)
	}
	bodies := map[string]*string{}
	add := func(from, n int) {
		var ids []string
		var bs []*string
		for i := from; i < from+n; i++ {
			id := fmt.Sprintf("r%03d", i)
			var b *string
			if i%7 != 3 {
				b = str([]string{"apple pie", "apples and pears", "the pear tree", "Running runners ran", "plum", ""}[i%6] + fmt.Sprintf(" w%d", i%5))
			}
			ids, bs = append(ids, id), append(bs, b)
			bodies[id] = b
		}
		r := rec(ids, bs)
		defer r.Release()
		st, err := ds.StageAppend(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if ds, err = table.Commit(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	add(0, 30)
	add(30, 30)
	st, err := ds.StageIndexes(ctx, func(ds *table.Dataset) ([]table.IndexFile, error) {
		f, err := Build(ctx, ds, "body")
		return []table.IndexFile{f}, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if ds, err = table.Commit(ctx, st); err != nil {
		t.Fatal(err)
	}
	if !Covers(ds, "body") {
		t.Fatal("a fresh index does not cover its version")
	}
	add(60, 10)
	st, err = ds.StageChanges(ctx, table.Changes{DeleteKeys: []string{"r004", "r031"}})
	if err != nil {
		t.Fatal(err)
	}
	if ds, err = table.Commit(ctx, st); err != nil {
		t.Fatal(err)
	}
	delete(bodies, "r004")
	delete(bodies, "r031")
	s, err := Open(ctx, ds, "body")
	if err != nil || s == nil {
		t.Fatalf("open: %v, %v", s, err)
	}
	if s.Scanned != 10 {
		t.Errorf("scanned %d uncovered rows, want 10", s.Scanned)
	}
	for _, q := range []string{"apple", "pears running", "w3", "tree plum", "zzz", "aple"} {
		terms := text.Terms(q)
		for _, edits := range []int{0, 1} {
			var want []string
			for id, b := range bodies {
				if b != nil && text.MatchAny(text.Tokens(*b), terms, edits) {
					want = append(want, id)
				}
			}
			slices.Sort(want)
			var got []string
			for _, h := range s.Match(terms, edits) {
				got = append(got, h.ID)
			}
			if !slices.Equal(got, want) { // ids ascend with scan order here
				t.Errorf("Match(%q, %d) = %v, want %v", q, edits, got, want)
			}
		}
		c := text.NewCorpus()
		for _, b := range bodies {
			if b != nil {
				c.Add(text.Tokens(*b))
			}
		}
		ic := s.Corpus(terms)
		if ic.Docs != c.Docs || ic.Tokens != c.Tokens {
			t.Errorf("%q: corpus %d docs %d tokens, want %d %d", q, ic.Docs, ic.Tokens, c.Docs, c.Tokens)
		}
		for _, term := range terms {
			if ic.DF[term] != c.DF[term] {
				t.Errorf("%q: df(%s) = %d, want %d", q, term, ic.DF[term], c.DF[term])
			}
		}
		type scored struct {
			id string
			v  float64
		}
		var all []scored
		for id, b := range bodies {
			if b != nil {
				if v := c.Score(text.Tokens(*b), terms); v > 0 {
					all = append(all, scored{id, v})
				}
			}
		}
		slices.SortFunc(all, func(a, b scored) int {
			if a.v != b.v {
				if a.v > b.v {
					return -1
				}
				return 1
			}
			if a.id > b.id {
				return -1
			}
			return 1
		})
		var want []string
		for _, x := range all[:min(4, len(all))] {
			want = append(want, x.id)
		}
		slices.Sort(want)
		var got []string
		for _, h := range s.Top(terms, ic, 4) {
			got = append(got, h.ID)
		}
		if !slices.Equal(got, want) {
			t.Errorf("Top(%q, 4) = %v, want %v", q, got, want)
		}
	}
	// Damage: every flipped byte is detected (checksum), a short file too.
	ix, _ := Index(ds, "body")
	b, _, err := store.Get(ctx, "t/"+ix.Path)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]byte{b[:len(b)/2], append(slices.Clone(b[:40]), append([]byte{b[40] ^ 1}, b[41:]...)...), []byte("nope")} {
		if _, _, err := decode(bad); err == nil {
			t.Errorf("decode accepted a damaged file of %d bytes", len(bad))
		}
	}
	if _, err := store.Put(ctx, "t/"+ix.Path, b[:len(b)-1]); err != nil {
		t.Fatal(err)
	}
	fresh, err := table.Open(ctx, store, "t", table.MainBranch)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := Open(ctx, fresh, "body"); s != nil || err != nil {
		t.Errorf("a damaged file: %v, %v; want no index", s, err)
	}
}
