package sim

import (
	"context"
	"encoding/json"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"errors"
	"fmt"
	"github.com/omnigraph-go/omnigraph/backend"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/change"
	"github.com/omnigraph-go/omnigraph/graph/cleanup"
	"github.com/omnigraph-go/omnigraph/graph/export"
	"github.com/omnigraph-go/omnigraph/graph/load"
	"github.com/omnigraph-go/omnigraph/graph/merge"
	"github.com/omnigraph-go/omnigraph/graph/mutate"
	"github.com/omnigraph-go/omnigraph/graph/optimize"
	"github.com/omnigraph-go/omnigraph/graph/query"
	gschema "github.com/omnigraph-go/omnigraph/graph/schema"
	"github.com/omnigraph-go/omnigraph/manifest"
	"github.com/omnigraph-go/omnigraph/table"
)

// schema is the simulated graph's schema: two keyed node types and two edge
// types, small id pools (see gen) so that writes collide often.
const schema = `
node Person {
  handle: String @key
  age: I32?
}
node Company {
  slug: String @key
}
edge Knows: Person -> Person {
  w: I32?
}
edge WorksAt: Person -> Company
`

const (
	nPersons   = 6
	nCompanies = 3
	nKnows     = 6
	nWorks     = 4
)

var userBranches = []string{"b1", "b2", "b3"}

// written is what a write reports: the commit it published, if any.
type written struct {
	commit string // "" : none
	extra  string // for the history (merge outcome...)
}

// op is one generated operation.
type op struct {
	desc   string
	client int // index of the client handle; -1: the read-only handle
	write  bool
	// target is the branch a write publishes on ("" for branch create and
	// delete and cleanup): an in-process heal of a pending write there runs
	// first.
	target string

	// writes
	exec    func(ctx context.Context, g *graph.Graph) (written, error)
	predict func(w *world) pred
	// cleanup marks a cleanup (the time-travel reads it may reclaim).
	cleanup bool

	// reads: read renders what the engine returns; expect what the world
	// predicts (ok false: the read must fail, e.g. a missing branch).
	read   func(ctx context.Context, g *graph.Graph) (string, error)
	expect func(w *world) (want string, ok bool)
	// stray marks the out-of-band table commit (never faulted).
	stray bool
	// travel is the commit a time-travel read reads: one older than the
	// last cleanup may be reclaimed (an error, never other rows).
	travel string
	// batch holds the operations of a concurrent batch (client -4).
	batch []*op
	// schema marks a schema apply (an unfinished one may leave its lock),
	// create a branch create; deletes names the branch a delete deletes,
	// merges the user branch of a merge.
	schema, create  bool
	deletes, merges string
	// blind marks a write that reads nothing it could lose (an insert-only
	// mutation, an append or merge load): it re-prepares when its branch
	// moves, and the process's write queue orders it behind the batch's
	// other writers, so it never conflicts on the branch head.
	blind bool
}

// line is one generated load line.
type line struct {
	kind byte
	id   string
	e    ent
}

func (l line) json() string {
	switch l.kind {
	case kPerson:
		if l.e.has {
			return fmt.Sprintf(`{"type":"Person","data":{"handle":%q,"age":%d}}`, l.id, l.e.val)
		}
		return fmt.Sprintf(`{"type":"Person","data":{"handle":%q}}`, l.id)
	case kCompany:
		return fmt.Sprintf(`{"type":"Company","data":{"slug":%q}}`, l.id)
	case kKnows:
		if l.e.has {
			return fmt.Sprintf(`{"edge":"Knows","from":%q,"to":%q,"data":{"id":%q,"w":%d}}`, l.e.src, l.e.dst, l.id, l.e.val)
		}
		return fmt.Sprintf(`{"edge":"Knows","from":%q,"to":%q,"data":{"id":%q}}`, l.e.src, l.e.dst, l.id)
	default:
		return fmt.Sprintf(`{"edge":"WorksAt","from":%q,"to":%q,"data":{"id":%q}}`, l.e.src, l.e.dst, l.id)
	}
}

func (l line) String() string { return data{ekey(l.kind, l.id): l.e}.String() }

func person(r *rand.Rand) string  { return fmt.Sprintf("p%d", r.IntN(nPersons)) }
func company(r *rand.Rand) string { return fmt.Sprintf("c%d", r.IntN(nCompanies)) }

func genLine(r *rand.Rand, kind byte) line {
	l := line{kind: kind}
	switch kind {
	case kPerson:
		l.id = person(r)
		if r.IntN(3) > 0 {
			l.e = ent{val: int32(r.IntN(60)), has: true}
		}
	case kCompany:
		l.id = company(r)
	case kKnows:
		l.id = fmt.Sprintf("k%d", r.IntN(nKnows))
		l.e = ent{src: person(r), dst: person(r)}
		if r.IntN(2) == 0 {
			l.e.val, l.e.has = int32(r.IntN(9)), true
		}
	case kWorks:
		l.id = fmt.Sprintf("w%d", r.IntN(nWorks))
		l.e = ent{src: person(r), dst: company(r)}
	}
	return l
}

var kinds = []byte{kPerson, kPerson, kPerson, kCompany, kKnows, kKnows, kWorks}

// genLines draws 1..4 lines with distinct entity keys.
func genLines(r *rand.Rand, only byte) []line {
	n := 1 + r.IntN(4)
	seen := map[string]bool{}
	var out []line
	for range n {
		k := only
		if k == 0 {
			k = kinds[r.IntN(len(kinds))]
		}
		l := genLine(r, k)
		if seen[ekey(l.kind, l.id)] {
			continue
		}
		seen[ekey(l.kind, l.id)] = true
		out = append(out, l)
	}
	return out
}

// errClass names an engine error's class for the history and the oracle.
func errClass(err error) string {
	var mc *merge.MergeConflicts
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &mc):
		return "conflict"
	case errors.Is(err, graph.ErrKeyConflict):
		return "keyconflict"
	case errors.Is(err, graph.ErrReferentialIntegrity):
		return "integrity"
	case errors.Is(err, manifest.ErrBranchNotFound):
		return "notfound"
	case errors.Is(err, manifest.ErrBranchExists):
		return "exists"
	case errors.Is(err, graph.ErrInvalidInput):
		return "input"
	case errors.Is(err, cleanup.ErrRefused):
		return "cleanup-refused"
	case errors.Is(err, graph.ErrRecoveryRequired):
		return "recovery"
	case errors.Is(err, graph.ErrContended):
		// one process's writers never spend a retry budget on each other
		return "contended"
	case errors.Is(err, graph.ErrReadSetChanged):
		return "read-set-changed"
	case errors.Is(err, graph.ErrTableDrift):
		return "drift"
	case errors.Is(err, graph.ErrSchemaLocked):
		return "schema-locked"
	case errors.Is(err, gschema.ErrBranchesExist):
		return "branches-exist"
	case errors.Is(err, graph.ErrHasDescendants):
		return "descendants"
	}
	return "other"
}

// compatible says whether an engine refusal of class got fits the model's
// predicted refusal want.
func compatible(want, got string) bool {
	switch want {
	case "recovery":
		// a write over a pending one: refused, however it says so
		return true
	case "keyconflict", "integrity":
		return got == "keyconflict" || got == "integrity" || got == "input"
	}
	return want == got
}

func loadOp(r *rand.Rand, br string) *op {
	var mode load.Mode
	var lines []line
	switch x := r.IntN(10); {
	case x < 5:
		mode, lines = load.Merge, genLines(r, 0)
	case x < 8:
		mode, lines = load.Append, genLines(r, 0)
	default:
		mode, lines = load.Overwrite, genLines(r, kinds[r.IntN(len(kinds))])
	}
	var text strings.Builder
	var shown []string
	for _, l := range lines {
		text.WriteString(l.json())
		text.WriteByte('\n')
		shown = append(shown, l.String())
	}
	src := text.String()
	return &op{
		desc:   fmt.Sprintf("load %s %s [%s]", mode, br, strings.Join(shown, " ")),
		write:  true,
		target: br,
		blind:  mode != load.Overwrite,
		exec: func(ctx context.Context, g *graph.Graph) (written, error) {
			res, err := load.Run(ctx, g, strings.NewReader(src), load.Options{Branch: br, Mode: mode})
			if err != nil {
				return written{}, err
			}
			return written{commit: commitOf(res.Commit)}, nil
		},
		predict: func(w *world) pred {
			b := w.br[br]
			if b == nil {
				return pred{refuse: "notfound"}
			}
			d := b.data.clone()
			switch mode {
			case load.Append:
				for _, l := range lines {
					if _, ok := d[ekey(l.kind, l.id)]; ok {
						return pred{refuse: "keyconflict", why: ekey(l.kind, l.id) + " exists"}
					}
				}
			case load.Overwrite:
				types := map[byte]bool{}
				for _, l := range lines {
					types[l.kind] = true
				}
				for k := range d {
					if types[k[0]] {
						delete(d, k)
					}
				}
			}
			for _, l := range lines {
				d[ekey(l.kind, l.id)] = l.e
			}
			if dg := d.dangling(); len(dg) > 0 {
				return pred{refuse: "integrity", why: "dangling " + strings.Join(dg, ",")}
			}
			return pred{branch: br, rule: commitMust, apply: func(w *world) { w.br[br].data = d.clone() }}
		},
	}
}

func commitOf(c *graph.CommitInfo) string {
	if c == nil {
		return ""
	}
	return c.ID
}

func mutateOp(r *rand.Rand, br string) *op {
	var src, desc string
	var change func(d data) bool // changes d; reports whether anything matched
	h := person(r)
	blind := false
	switch x := r.IntN(10); {
	case x < 3:
		blind = true
		age := int32(r.IntN(60))
		if r.IntN(4) == 0 {
			src = fmt.Sprintf(`mutation m() { insert Person { handle: %q } }`, h)
			desc = fmt.Sprintf("insert P/%s", h)
			change = func(d data) bool { d[ekey(kPerson, h)] = ent{}; return true }
		} else {
			src = fmt.Sprintf(`mutation m() { insert Person { handle: %q, age: %d } }`, h, age)
			desc = fmt.Sprintf("insert P/%s=%d", h, age)
			change = func(d data) bool { d[ekey(kPerson, h)] = ent{val: age, has: true}; return true }
		}
	case x < 6:
		age := int32(r.IntN(60))
		src = fmt.Sprintf(`mutation m() { update Person set { age: %d } where handle = %q }`, age, h)
		desc = fmt.Sprintf("update P/%s age=%d", h, age)
		change = func(d data) bool {
			k := ekey(kPerson, h)
			if _, ok := d[k]; !ok {
				return false
			}
			d[k] = ent{val: age, has: true}
			return true
		}
	case x < 8:
		src = fmt.Sprintf(`mutation m() { delete Person where handle = %q }`, h)
		desc = fmt.Sprintf("delete P/%s", h)
		change = func(d data) bool {
			k := ekey(kPerson, h)
			if _, ok := d[k]; !ok {
				return false
			}
			d.cascade(k)
			return true
		}
	case x < 9:
		c := company(r)
		src = fmt.Sprintf(`mutation m() { delete Company where slug = %q }`, c)
		desc = fmt.Sprintf("delete C/%s", c)
		change = func(d data) bool {
			k := ekey(kCompany, c)
			if _, ok := d[k]; !ok {
				return false
			}
			d.cascade(k)
			return true
		}
	default:
		src = fmt.Sprintf(`mutation m() { delete Knows where from = %q }`, h)
		desc = fmt.Sprintf("delete Knows from %s", h)
		change = func(d data) bool {
			hit := false
			for k, e := range d {
				if k[0] == kKnows && e.src == h {
					delete(d, k)
					hit = true
				}
			}
			return hit
		}
	}
	return &op{
		desc:   fmt.Sprintf("mutate %s: %s", br, desc),
		write:  true,
		target: br,
		blind:  blind,
		exec: func(ctx context.Context, g *graph.Graph) (written, error) {
			res, err := mutate.Query(ctx, g, src, "", mutate.Options{Branch: br})
			if err != nil {
				return written{}, err
			}
			return written{commit: commitOf(res.Commit)}, nil
		},
		predict: func(w *world) pred {
			b := w.br[br]
			if b == nil {
				return pred{refuse: "notfound"}
			}
			d := b.data.clone()
			if !change(d) {
				return pred{branch: br, rule: commitNever, apply: func(*world) {}}
			}
			return pred{branch: br, rule: commitMust, apply: func(w *world) { w.br[br].data = d.clone() }}
		},
	}
}

func createOp(name, from string) *op {
	desc := "branch create " + name
	if from != "main" {
		desc += " from " + from
	}
	return &op{
		desc:   desc,
		write:  true,
		create: true,
		exec: func(ctx context.Context, g *graph.Graph) (written, error) {
			_, err := g.CreateBranch(ctx, name, from)
			return written{}, err
		},
		predict: func(w *world) pred {
			if w.br[name] != nil {
				return pred{refuse: "exists"}
			}
			if w.br[from] == nil {
				return pred{refuse: "notfound", why: from + " is not a branch"}
			}
			return pred{rule: commitNever, apply: func(w *world) {
				m := w.br[from]
				b := &branch{data: m.data.clone(), commits: slices.Clone(m.commits), parent: from}
				b.setSync(m.data, len(m.commits), len(m.commits), 'f')
				w.br[name] = b
			}}
		},
	}
}

func deleteOp(name string) *op {
	return &op{
		desc:    "branch delete " + name,
		write:   true,
		deletes: name,
		exec: func(ctx context.Context, g *graph.Graph) (written, error) {
			return written{}, g.DeleteBranch(ctx, name)
		},
		predict: func(w *world) pred {
			if w.br[name] == nil {
				return pred{refuse: "notfound"}
			}
			for _, n := range w.branchNames() {
				if w.br[n].parent == name {
					return pred{refuse: "descendants", why: n + " forked from " + name}
				}
			}
			return pred{rule: commitNever, apply: func(w *world) { delete(w.br, name) }}
		},
	}
}

// mergeOp merges src into dst; one of them is the parent of the other, a
// user branch (the branch it forked from: main, or a user branch). Other
// pairs (siblings, criss-cross bases) are not generated.
func mergeOp(src, dst, parent string) *op {
	user := src
	if src == parent {
		user = dst
	}
	return &op{
		desc:   "merge " + src + " into " + dst,
		write:  true,
		merges: user,
		target: dst,
		exec: func(ctx context.Context, g *graph.Graph) (written, error) {
			res, err := merge.Run(ctx, g, src, dst, merge.Options{})
			if err != nil {
				return written{}, err
			}
			return written{commit: commitOf(res.Commit), extra: string(res.Outcome)}, nil
		},
		predict: func(w *world) pred {
			u, m := w.br[user], w.br[parent]
			if u == nil || m == nil {
				return pred{refuse: "notfound"}
			}
			if u.parent != parent {
				return pred{refuse: "unmodeled", why: user + " forked from " + u.parent + " in this world"}
			}
			s, t := w.br[src], w.br[dst]
			upToDate := false
			if src == parent {
				upToDate = (u.by == 'f' || u.by == 'm') && len(m.commits) == u.mainLen
			} else {
				upToDate = (u.by == 'f' || u.by == 'b') && len(u.commits) == u.baseLen
			}
			if upToDate {
				return pred{branch: dst, rule: commitNever, apply: func(*world) {}, why: "up to date"}
			}
			out, conflicts := threeWay(u.base, s.data, t.data)
			if len(conflicts) > 0 {
				return pred{refuse: "conflict", why: strings.Join(conflicts, ",")}
			}
			return pred{branch: dst, rule: commitMust, sync: user, apply: func(w *world) {
				s, t, u, m := w.br[src], w.br[dst], w.br[user], w.br[parent]
				t.data = out.clone()
				// the sync point: the source head merged, with the
				// lengths after the merge commit lands on the target
				if src == parent {
					u.setSync(s.data, len(u.commits)+1, len(m.commits), 'm')
				} else {
					u.setSync(s.data, len(u.commits), len(m.commits)+1, 'b')
				}
			}}
		},
	}
}

func optimizeOp(br string) *op {
	return &op{
		desc:   "optimize " + br,
		write:  true,
		target: br,
		exec: func(ctx context.Context, g *graph.Graph) (written, error) {
			res, err := optimize.Run(ctx, g, optimize.Options{Branch: br})
			if err != nil {
				return written{}, err
			}
			return written{commit: commitOf(res.Commit)}, nil
		},
		predict: func(w *world) pred {
			if w.br[br] == nil {
				return pred{refuse: "notfound"}
			}
			return pred{branch: br, rule: commitMaybe, apply: func(*world) {}}
		},
	}
}

func cleanupOp(keep int) *op {
	return &op{
		desc:    fmt.Sprintf("cleanup keep %d", keep),
		write:   true,
		cleanup: true,
		exec: func(ctx context.Context, g *graph.Graph) (written, error) {
			_, err := cleanup.Run(ctx, g, cleanup.Options{Keep: keep, Confirm: true})
			return written{}, err
		},
		predict: func(w *world) pred { return pred{rule: commitNever, apply: func(*world) {}} },
	}
}

// readData reads every table of a snapshot into the model's form.
func readData(ctx context.Context, s *graph.Snapshot) (data, error) {
	d := data{}
	for _, p := range s.Tables() {
		var kind byte
		for k, t := range tableOfKind {
			if t == p.Key {
				kind = k
			}
		}
		if kind == 0 {
			return nil, fmt.Errorf("unexpected table %s", p.Key)
		}
		ds, err := s.OpenTable(ctx, p.Key)
		if err != nil {
			return nil, err
		}
		recs, err := ds.Scan(ctx, table.ScanOptions{})
		if err != nil {
			return nil, err
		}
		for _, rec := range recs {
			for _, row := range change.RecordRows(rec) {
				id, _ := row["id"].(string)
				var e ent
				switch kind {
				case kPerson:
					if h, _ := row["handle"].(string); h != id {
						return nil, fmt.Errorf("Person %s has handle %v", id, row["handle"])
					}
					e.val, e.has = intOf(row["age"])
				case kCompany:
					if h, _ := row["slug"].(string); h != id {
						return nil, fmt.Errorf("Company %s has slug %v", id, row["slug"])
					}
				case kKnows:
					e.val, e.has = intOf(row["w"])
					fallthrough
				case kWorks:
					e.src, _ = row["src"].(string)
					e.dst, _ = row["dst"].(string)
				}
				k := ekey(kind, id)
				if _, dup := d[k]; dup {
					rec.Release()
					return nil, fmt.Errorf("entity %s is live twice", k)
				}
				d[k] = e
			}
			rec.Release()
		}
	}
	return d, nil
}

func intOf(v any) (int32, bool) {
	switch x := v.(type) {
	case int32:
		return x, true
	case int64:
		return int32(x), true
	case int:
		return int32(x), true
	}
	return 0, false
}

func readOp(br string) *op {
	return &op{
		desc: "read " + br,
		read: func(ctx context.Context, g *graph.Graph) (string, error) {
			s, err := g.Snapshot(ctx, br)
			if err != nil {
				return "", err
			}
			d, err := readData(ctx, s)
			return d.String(), err
		},
		expect: func(w *world) (string, bool) {
			b := w.br[br]
			if b == nil {
				return "", false
			}
			return b.data.String(), true
		},
	}
}

// queryOp is one read query with the model's answer.
func queryOp(r *rand.Rand, br string) *op {
	var src, desc string
	var params map[string]any
	var answer func(d data) []string
	switch r.IntN(3) {
	case 0:
		n := int32(r.IntN(60))
		src = fmt.Sprintf(`query q() { match { $p: Person  $p.age >= %d } return { $p.handle, $p.age } order { $p.handle } }`, n)
		desc = fmt.Sprintf("persons with age >= %d", n)
		answer = func(d data) []string {
			var out []string
			for k, e := range d {
				if k[0] == kPerson && e.has && e.val >= n {
					out = append(out, fmt.Sprintf("%s,%d", k[2:], e.val))
				}
			}
			return out
		}
	case 1:
		h := person(r)
		src = `query q($h: String) { match { $p: Person { handle: $h }  $p knows $f } return { $f.handle } order { $f.handle } }`
		params = map[string]any{"h": h}
		desc = fmt.Sprintf("whom %s knows", h)
		answer = func(d data) []string {
			set := map[string]bool{}
			for k, e := range d {
				if k[0] == kKnows && e.src == h {
					set[e.dst] = true
				}
			}
			var out []string
			for f := range set {
				out = append(out, f)
			}
			return out
		}
	default:
		src = `query q() { match { $a worksAt $c } return { $a.handle, $c.slug } order { $a.handle, $c.slug } }`
		desc = "who works where"
		answer = func(d data) []string {
			set := map[string]bool{}
			for k, e := range d {
				if k[0] == kWorks {
					set[e.src+","+e.dst] = true
				}
			}
			var out []string
			for p := range set {
				out = append(out, p)
			}
			return out
		}
	}
	return &op{
		desc: fmt.Sprintf("query %s: %s", br, desc),
		read: func(ctx context.Context, g *graph.Graph) (string, error) {
			res, err := query.Head(ctx, g, br, src, "", params)
			if err != nil {
				return "", err
			}
			var rows []string
			for _, row := range res.Rows {
				var vs []string
				for _, v := range row {
					if v == nil {
						vs = append(vs, "null")
					} else {
						vs = append(vs, fmt.Sprint(v))
					}
				}
				rows = append(rows, strings.Join(vs, ","))
			}
			return strings.Join(rows, " | "), nil
		},
		expect: func(w *world) (string, bool) {
			b := w.br[br]
			if b == nil {
				return "", false
			}
			out := answer(b.data)
			sort.Strings(out)
			return strings.Join(out, " | "), true
		},
	}
}

// strayOp commits a Person row to main's Person table outside the
// manifest, as a writer of another version that armed no intent might:
// uncovered drift. It goes straight to the store, not through the engine.
func strayOp(raw backend.StorageAdapter) *op {
	return &op{
		desc:   "stray table commit on main's Person table",
		write:  true,
		target: "",
		stray:  true,
		exec: func(ctx context.Context, _ *graph.Graph) (written, error) {
			g, err := graph.Open(ctx, raw, graph.OpenOptions{ReadOnly: true})
			if err != nil {
				return written{}, err
			}
			s, err := g.Snapshot(ctx, "main")
			if err != nil {
				return written{}, err
			}
			ds, err := s.OpenTable(ctx, "node:Person")
			if err != nil {
				return written{}, err
			}
			b := array.NewRecordBuilder(memory.DefaultAllocator, ds.Schema())
			defer b.Release()
			for i, f := range ds.Schema().Fields() {
				switch f.Name {
				case "id", "handle":
					b.Field(i).(*array.StringBuilder).Append("stray")
				default:
					b.Field(i).AppendNull()
				}
			}
			rec := b.NewRecordBatch()
			defer rec.Release()
			st, err := ds.StageAppend(ctx, rec)
			if err != nil {
				return written{}, err
			}
			_, err = table.Commit(ctx, st)
			return written{}, err
		},
		predict: func(w *world) pred {
			return pred{rule: commitNever, apply: func(w *world) { w.br["main"].drift = true }}
		},
	}
}

// repairOp runs repair --confirm: pending intents are resolved, drift is
// restored (with a commit or without: the model allows both).
func repairOp() *op {
	return &op{
		desc:  "repair --confirm",
		write: true,
		exec: func(ctx context.Context, g *graph.Graph) (written, error) {
			rep, err := g.Repair(ctx, true)
			if err != nil {
				// Repair fails after its publish when the audit row cannot
				// be written (docs/dev/simulation.md, "Findings"): its
				// failure is not a proof that nothing changed.
				return written{}, fmt.Errorf("%w: repair failed, perhaps after its publish: %w", backend.ErrUnknown, err)
			}
			if rep.Applied {
				return written{commit: maybeCommit, extra: fmt.Sprintf("restored %d drift", len(rep.Drift))}, nil
			}
			return written{}, nil
		},
		predict: func(w *world) pred {
			return pred{branch: "main", rule: commitMaybe, apply: func(w *world) {
				for _, b := range w.br {
					b.drift = false
				}
			}}
		},
	}
}

// maybeCommit is what a write reports that may have published a commit
// whose id it does not return.
const maybeCommit = "?"

// exportOp exports a branch (graph/export) and reads the envelope back into
// the model's form: the rebuild path must carry exactly the branch's rows.
func exportOp(br string) *op {
	return &op{
		desc: "export " + br,
		read: func(ctx context.Context, g *graph.Graph) (string, error) {
			snap, err := g.Snapshot(ctx, br)
			if err != nil {
				return "", err
			}
			var buf strings.Builder
			if _, err := export.Run(ctx, snap, &buf, export.Options{}); err != nil {
				return "", err
			}
			d := data{}
			for _, ln := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
				if ln == "" {
					continue
				}
				var env struct {
					Type, Edge, From, To string
					Data                 map[string]any
				}
				if err := json.Unmarshal([]byte(ln), &env); err != nil {
					return "", fmt.Errorf("export line %q: %w", ln, err)
				}
				var e ent
				var k string
				switch {
				case env.Type == "Person":
					k = ekey(kPerson, fmt.Sprint(env.Data["handle"]))
					if a, ok := env.Data["age"].(float64); ok {
						e.val, e.has = int32(a), true
					}
				case env.Type == "Company":
					k = ekey(kCompany, fmt.Sprint(env.Data["slug"]))
				case env.Edge == "Knows", env.Edge == "WorksAt":
					kind := byte(kKnows)
					if env.Edge == "WorksAt" {
						kind = kWorks
					}
					k = ekey(kind, fmt.Sprint(env.Data["id"]))
					e.src, e.dst = env.From, env.To
					if w, ok := env.Data["w"].(float64); ok {
						e.val, e.has = int32(w), true
					}
				default:
					return "", fmt.Errorf("export line %q: unknown envelope", ln)
				}
				if _, dup := d[k]; dup {
					return "", fmt.Errorf("export carries %s twice", k)
				}
				d[k] = e
			}
			return d.String(), nil
		},
		expect: func(w *world) (string, bool) {
			b := w.br[br]
			if b == nil {
				return "", false
			}
			return b.data.String(), true
		},
	}
}

// lostToConcurrent says whether a refusal is the engine's answer to a
// concurrent writer that got there first (the write changed nothing and
// may be retried).
// headConflict reports whether err refuses a write because its branch's
// head moved (not its schema, not the branch deleted or recreated).
func headConflict(err error) bool {
	var rs *graph.ReadSetChanged
	return errors.As(err, &rs) && rs.Member == "graph_head" || errors.Is(err, manifest.ErrHeadMoved)
}

func lostToConcurrent(err error) bool {
	switch errClass(err) {
	case "read-set-changed", "schema-locked":
		return true
	}
	return errors.Is(err, manifest.ErrHeadMoved)
}

// schemaWith is the schema with k more nullable Person properties x1..xk
// (the simulated schema applies only add: the model's reads ignore them).
func schemaWith(k int) string {
	var props strings.Builder
	for i := 1; i <= k; i++ {
		fmt.Fprintf(&props, "  x%d: String?\n", i)
	}
	return strings.Replace(schema, "  age: I32?\n", "  age: I32?\n"+props.String(), 1)
}

// schemaOp applies the schema with k extra properties (omnigraph schema
// apply): k is above every earlier apply's, so whatever storage holds the
// apply adds at least one property and commits on main. It is refused
// while other branches exist.
func schemaOp(k int, breakStale bool) *op {
	src := schemaWith(k)
	return &op{
		desc:   fmt.Sprintf("schema apply (+x%d)", k),
		write:  true,
		target: "main",
		schema: true,
		exec: func(ctx context.Context, g *graph.Graph) (written, error) {
			res, err := gschema.Apply(ctx, g, src, gschema.ApplyOptions{BreakStaleLock: breakStale})
			if err != nil {
				return written{}, err
			}
			if res.NoOp {
				return written{extra: "no-op"}, nil
			}
			return written{commit: commitOf(res.Commit)}, nil
		},
		predict: func(w *world) pred {
			if len(w.br) > 1 {
				return pred{refuse: "branches-exist", why: "branches " + strings.Join(w.branchNames(), ",")}
			}
			return pred{branch: "main", rule: commitMust, apply: func(*world) {}}
		},
	}
}
