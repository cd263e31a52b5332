package schema_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/backend/counter"
	"github.com/omnigraph-go/omnigraph/backend/fault"
	"github.com/omnigraph-go/omnigraph/backend/mem"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/graph/load"
	"github.com/omnigraph-go/omnigraph/graph/query"
	"github.com/omnigraph-go/omnigraph/graph/schema"
	"github.com/omnigraph-go/omnigraph/lang/pg"
	"github.com/omnigraph-go/omnigraph/manifest"
	"github.com/omnigraph-go/omnigraph/table"
)

// base is the accepted schema every test starts from.
const base = `
node Person @description("a person") {
  handle: String @key
  name: String
  age: I32?
  nick: String?
  mood: enum(happy, sad)?
  email: String?
  vec: Vector(2)? @embed("name")
}

node Team {
  slug: String @key
  tier: enum(free, pro)
}

node Empty {
  slug: String @key
}

edge Knows: Person -> Person {
  since: I32?
}

edge MemberOf: Person -> Team @card(0..2)
`

const seed = `{"type":"Person","data":{"handle":"p1","name":"Ann","age":10,"nick":"a","email":"ann@x.org"}}
{"type":"Person","data":{"handle":"p2","name":"Bob","age":20,"nick":"a","email":"bad"}}
{"type":"Person","data":{"handle":"p3","name":"Cy","age":30,"mood":"happy"}}
{"type":"Team","data":{"slug":"t1","tier":"pro"}}
{"edge":"Knows","from":"p1","to":"p2","data":{"id":"k1","since":2001}}
{"edge":"Knows","from":"p2","to":"p3","data":{"id":"k2"}}
{"edge":"MemberOf","from":"p1","to":"t1","data":{"id":"m1"}}
`

func seeded(t testing.TB, store backend.StorageAdapter) *graph.Graph {
	t.Helper()
	ctx := context.Background()
	g, err := graph.Init(ctx, store, base, graph.InitOptions{Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := load.Run(ctx, g, strings.NewReader(seed), load.Options{Mode: load.Append}); err != nil {
		t.Fatal(err)
	}
	return g
}

// edit returns base with each old -> new replacement made once.
func edit(t testing.TB, pairs ...string) string {
	t.Helper()
	s := base
	for i := 0; i < len(pairs); i += 2 {
		if !strings.Contains(s, pairs[i]) {
			t.Fatalf("edit: %q is not in the base schema", pairs[i])
		}
		s = strings.Replace(s, pairs[i], pairs[i+1], 1)
	}
	return s
}

func compile(t testing.TB, src string) *pg.Catalog {
	t.Helper()
	c, err := pg.Compile(src)
	if err != nil {
		t.Fatalf("compile: %v\n%s", err, src)
	}
	return c
}

func plan(t testing.TB, g *graph.Graph, src string, opts schema.PlanOptions) *schema.Plan {
	t.Helper()
	snap, err := g.Snapshot(context.Background(), "main")
	if err != nil {
		t.Fatal(err)
	}
	p, err := schema.Compute(context.Background(), snap, compile(t, src), opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func ask(t testing.TB, s *graph.Snapshot, src string) string {
	t.Helper()
	r, err := query.Run(context.Background(), s, src, "", nil)
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	return fmt.Sprint(r.Rows)
}

func head(t testing.TB, g *graph.Graph) *graph.Snapshot {
	t.Helper()
	s, err := g.Snapshot(context.Background(), "main")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPlanStepKinds is the planner's table: each desired schema, against
// the seeded graph, plans exactly the listed step (kind, effect and, for a
// refusal, its code), and a refused step carries a reason and a hint.
func TestPlanStepKinds(t *testing.T) {
	g := seeded(t, mem.New())
	type want struct{ kind, effect, code string }
	cases := []struct {
		name      string
		src       string
		allowLoss bool
		want      want
		examples  string // substring of the examples, for data checks
	}{
		{name: "add node type", src: base + "node Tag { slug: String @key }", want: want{schema.KindAddType, schema.EffectCreate, ""}},
		{name: "add edge type", src: base + "edge Likes: Person -> Team", want: want{schema.KindAddType, schema.EffectCreate, ""}},
		{name: "add interface", src: base + "interface Named { name: String }", want: want{schema.KindAddType, schema.EffectMetadata, ""}},
		{name: "rename type", src: edit(t, "node Team {", `node Squad @rename_from("Team") {`, "-> Team", "-> Squad"), want: want{schema.KindRenameType, schema.EffectMetadata, ""}},
		{name: "rename property", src: edit(t, "nick: String?", `alias: String? @rename_from("nick")`), want: want{schema.KindRenameProperty, schema.EffectRewrite, ""}},
		{name: "add nullable property", src: edit(t, "email: String?", "email: String?\n  city: String?"), want: want{schema.KindAddProperty, schema.EffectRewrite, ""}},
		{name: "add required property to an empty type", src: edit(t, "node Empty {", "node Empty {\n  size: I32"), want: want{schema.KindAddProperty, schema.EffectRewrite, ""}},
		{name: "add required property to a populated type", src: edit(t, "email: String?", "email: String?\n  city: String"), want: want{schema.KindUnsupported, schema.EffectRefused, schema.CodeRequiredProperty}},
		{name: "drop empty type", src: strings.Replace(base, "node Empty {\n  slug: String @key\n}", "", 1), want: want{schema.KindDropType, schema.EffectMetadata, ""}},
		{name: "drop populated type", src: strings.Replace(base, "edge MemberOf: Person -> Team @card(0..2)", "", 1), want: want{schema.KindDropType, schema.EffectRefused, schema.CodeDropEdgeType}},
		{name: "drop populated type, data loss allowed", src: strings.Replace(base, "edge MemberOf: Person -> Team @card(0..2)", "", 1), allowLoss: true, want: want{schema.KindDropType, schema.EffectMetadata, ""}},
		{name: "drop populated property", src: edit(t, "email: String?\n", ""), want: want{schema.KindDropProperty, schema.EffectRefused, schema.CodeDropProperty}},
		{name: "drop populated property, data loss allowed", src: edit(t, "email: String?\n", ""), allowLoss: true, want: want{schema.KindDropProperty, schema.EffectRewrite, ""}},
		{name: "extend enum", src: edit(t, "enum(happy, sad)", "enum(happy, sad, calm)"), want: want{schema.KindExtendEnum, schema.EffectMetadata, ""}},
		{name: "narrow enum", src: edit(t, "enum(happy, sad)", "enum(happy)"), want: want{schema.KindUnsupported, schema.EffectRefused, schema.CodeTypeChange}},
		{name: "enum to String", src: edit(t, "mood: enum(happy, sad)?", "mood: String?"), want: want{schema.KindUnsupported, schema.EffectRefused, schema.CodeTypeChange}},
		{name: "change type", src: edit(t, "age: I32?", "age: I64?"), want: want{schema.KindUnsupported, schema.EffectRefused, schema.CodeTypeChange}},
		{name: "required to nullable", src: edit(t, "name: String\n", "name: String?\n"), want: want{schema.KindPropertyMetadata, schema.EffectRewrite, ""}},
		{name: "nullable to required with nulls", src: edit(t, "mood: enum(happy, sad)?", "mood: enum(happy, sad)"), want: want{schema.KindUnsupported, schema.EffectRefused, schema.CodeTighten}, examples: "p1"},
		{name: "reorder properties", src: edit(t, "  age: I32?\n  nick: String?\n", "  nick: String?\n  age: I32?\n"), want: want{schema.KindReorderProperties, schema.EffectRewrite, ""}},
		{name: "add index", src: edit(t, "nick: String?", "nick: String? @index"), want: want{schema.KindAddConstraint, schema.EffectMetadata, ""}},
		{name: "add unique that holds", src: edit(t, "email: String?", "email: String? @unique"), want: want{schema.KindAddConstraint, schema.EffectMetadata, ""}},
		{name: "add unique that existing rows break", src: edit(t, "nick: String?", "nick: String? @unique"), want: want{schema.KindUnsupported, schema.EffectRefused, schema.CodeViolation}, examples: "p1 = p2"},
		{name: "add range that holds", src: edit(t, "vec: Vector(2)? @embed(\"name\")", "vec: Vector(2)? @embed(\"name\")\n  @range(age, 0..100)"), want: want{schema.KindAddConstraint, schema.EffectMetadata, ""}},
		{name: "add range that existing rows break", src: edit(t, "vec: Vector(2)? @embed(\"name\")", "vec: Vector(2)? @embed(\"name\")\n  @range(age, 15..)"), want: want{schema.KindUnsupported, schema.EffectRefused, schema.CodeViolation}, examples: "p1"},
		{name: "add check that existing rows break", src: edit(t, "vec: Vector(2)? @embed(\"name\")", "vec: Vector(2)? @embed(\"name\")\n  @check(email, \"@\")"), want: want{schema.KindUnsupported, schema.EffectRefused, schema.CodeViolation}, examples: "p2"},
		{name: "change key", src: edit(t, "handle: String @key\n  name: String\n", "handle: String\n  name: String @key\n"), want: want{schema.KindUnsupported, schema.EffectRefused, schema.CodeKeyChange}},
		{name: "change endpoints", src: edit(t, "edge Knows: Person -> Person", "edge Knows: Person -> Team"), want: want{schema.KindUnsupported, schema.EffectRefused, schema.CodeEndpoints}},
		{name: "widen card", src: edit(t, "@card(0..2)", "@card(0..5)"), want: want{schema.KindAddConstraint, schema.EffectMetadata, ""}},
		{name: "tighten card", src: edit(t, "@card(0..2)", "@card(1..2)"), want: want{schema.KindUnsupported, schema.EffectRefused, schema.CodeCard}},
		{name: "change embed", src: edit(t, `@embed("name")`, `@embed("nick")`), want: want{schema.KindUnsupported, schema.EffectRefused, schema.CodeEmbed}},
		{name: "type metadata", src: edit(t, `@description("a person")`, `@description("someone")`), want: want{schema.KindTypeMetadata, schema.EffectMetadata, ""}},
		{name: "property metadata", src: edit(t, "since: I32?", `since: I32? @description("year")`), want: want{schema.KindPropertyMetadata, schema.EffectMetadata, ""}},
		{name: "property rename source still declared", src: edit(t, "email: String?", `email: String?`+"\n  mail: String? @rename_from(\"email\")"), want: want{schema.KindUnsupported, schema.EffectRefused, schema.CodeRename}},
		{name: "rename source still declared", src: edit(t, "node Empty {", `node Void @rename_from("Team") { slug: String @key }`+"\nnode Empty {"), want: want{schema.KindUnsupported, schema.EffectRefused, schema.CodeRename}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := plan(t, g, tc.src, schema.PlanOptions{AllowDataLoss: tc.allowLoss})
			var got *schema.Step
			for i, s := range p.Steps {
				if s.Kind == tc.want.kind && s.Effect == tc.want.effect && s.Code == tc.want.code {
					got = &p.Steps[i]
				}
			}
			if got == nil {
				t.Fatalf("steps %+v: no %+v", p.Steps, tc.want)
			}
			if len(p.Steps) != 1 && tc.name != "rename type" {
				t.Fatalf("steps %+v: want exactly the one step", p.Steps)
			}
			if refused := tc.want.effect == schema.EffectRefused; p.Supported == refused {
				t.Fatalf("supported = %v with steps %+v", p.Supported, p.Steps)
			}
			if got.Effect == schema.EffectRefused && (got.Reason == "" || got.Hint == "" || got.Entity == "") {
				t.Fatalf("refused step %+v lacks a reason, hint or entity", got)
			}
			if tc.examples != "" && !strings.Contains(strings.Join(got.Examples, ";"), tc.examples) {
				t.Fatalf("examples %v, want %q among them", got.Examples, tc.examples)
			}
		})
	}
	t.Run("same schema", func(t *testing.T) {
		p := plan(t, g, "// only a comment differs\n"+base, schema.PlanOptions{})
		if !p.NoOp || !p.Supported || len(p.Steps) != 0 {
			t.Fatalf("plan of the same schema: %+v", p)
		}
	})
}

// migrated is a supported change of every data-touching kind at once: a
// renamed type (Team -> Squad, no column change), a renamed property
// (nick -> alias), a new nullable property (city), a new type (Tag), a
// dropped populated property (email, with data loss allowed), an extended
// enum, a renamed edge whose columns change (Knows -> Met: since renamed to
// year), a new index and a new metadata annotation.
func migrated(t testing.TB) string {
	return edit(t,
		"node Team {", `node Squad @rename_from("Team") {`,
		"-> Team", "-> Squad",
		"nick: String?", `alias: String? @rename_from("nick") @index`,
		"email: String?\n", "city: String?\n",
		"enum(happy, sad)", "enum(happy, sad, calm)",
		"edge Knows: Person -> Person {\n  since: I32?", "edge Met: Person -> Person @rename_from(\"Knows\") {\n  year: I32? @rename_from(\"since\")",
	) + "\nnode Tag { slug: String @key }\n"
}

const (
	qOld      = `query q() { match { $p: Person } return { $p.handle, $p.nick, $p.email } order { $p.handle } }`
	qOldEdges = `query q() { match { $a: Person  $a knows $b } return { $a.handle, $b.handle as other } order { $a.handle } }`
	qNew      = `query q() { match { $p: Person } return { $p.handle, $p.alias, $p.city, $p.mood } order { $p.handle } }`
	qNewEdges = `query q() { match { $a: Person  $a met $b } return { $a.handle, $b.handle as other } order { $a.handle } }`
	qSquads   = `query q() { match { $p: Person  $p memberOf $s } return { $p.handle, $s.slug, $s.tier } }`
)

const (
	wantOld      = "[[p1 a ann@x.org] [p2 a bad] [p3 <nil> <nil>]]"
	wantOldEdges = "[[p1 p2] [p2 p3]]"
	wantNew      = "[[p1 a <nil> <nil>] [p2 a <nil> <nil>] [p3 <nil> <nil> happy]]"
	wantNewEdges = "[[p1 p2] [p2 p3]]"
	wantSquads   = "[[p1 t1 pro]]"
)

// TestApplyEveryKind applies the combined migration as one commit and pins
// the result: queries in the new names answer with the old data (renamed
// columns keep their values, new ones are null), writes use the new schema,
// a fresh handle agrees, and time travel to the commit before the apply
// reads the old schema and the old columns.
func TestApplyEveryKind(t *testing.T) {
	ctx := context.Background()
	store := mem.New()
	g := seeded(t, store)
	before := head(t, g)
	if got := ask(t, before, qOld); got != wantOld {
		t.Fatalf("before: %s", got)
	}
	res, err := schema.Apply(ctx, g, migrated(t), schema.ApplyOptions{PlanOptions: schema.PlanOptions{AllowDataLoss: true}})
	if err != nil {
		t.Fatal(err)
	}
	if res.NoOp || res.Commit == nil {
		t.Fatalf("apply result %+v", res)
	}
	if got, want := strings.Join(res.Tables, ","), "edge:Met,node:Person,node:Tag"; got != want {
		t.Fatalf("rewritten or created tables %s, want %s", got, want)
	}
	after := head(t, g)
	if after.Version() != before.Version()+1 || after.SchemaIdentity() != compile(t, migrated(t)).Identity {
		t.Fatalf("after: version %d (was %d), identity %s", after.Version(), before.Version(), after.SchemaIdentity())
	}
	commits, err := g.Commits(ctx, "main", 0)
	if err != nil || commits[0].ID != res.Commit.ID || len(commits) != 3 {
		t.Fatalf("commits %+v (%v): want the apply on top of init and load", commits, err)
	}
	for _, h := range []*graph.Graph{g, reopen(t, store)} {
		s := head(t, h)
		for q, want := range map[string]string{qNew: wantNew, qNewEdges: wantNewEdges, qSquads: wantSquads} {
			if got := ask(t, s, q); got != want {
				t.Fatalf("%s:\n got %s\nwant %s", q, got, want)
			}
		}
		if _, err := query.Run(ctx, s, qOld, "", nil); err == nil {
			t.Fatal("a query of a dropped property still runs on the new schema")
		}
	}
	if _, ok := after.Pin("edge:Knows"); ok {
		t.Fatal("the new version still pins edge:Knows")
	}
	if pin, _ := after.Pin("node:Squad"); pin.Path != graph.NodeTablePath("Team") {
		t.Fatalf("node:Squad pins %+v: a rename without column changes keeps the table", pin)
	}
	// Writes take the new schema.
	data := `{"type":"Tag","data":{"slug":"go"}}
{"type":"Person","data":{"handle":"p4","name":"Di","alias":"d","city":"Oslo","mood":"calm"}}
{"edge":"Met","from":"p4","to":"p1","data":{"year":2020}}
{"type":"Squad","data":{"slug":"t2","tier":"free"}}`
	if _, err := load.Run(ctx, g, strings.NewReader(data), load.Options{Mode: load.Append}); err != nil {
		t.Fatalf("load after apply: %v", err)
	}
	s := head(t, g)
	if got, want := ask(t, s, qNew), "[[p1 a <nil> <nil>] [p2 a <nil> <nil>] [p3 <nil> <nil> happy] [p4 d Oslo calm]]"; got != want {
		t.Fatalf("after load: %s, want %s", got, want)
	}
	if got, want := ask(t, s, `query q() { match { $a: Person  $a met $b } return { $a.handle, $b.handle as other } order { $a.handle } }`), "[[p1 p2] [p2 p3] [p4 p1]]"; got != want {
		t.Fatalf("edges after load: %s, want %s", got, want)
	}
	// Time travel: the commit before the apply reads with its own schema.
	old, err := g.SnapshotAt(ctx, before.CommitID())
	if err != nil {
		t.Fatal(err)
	}
	if old.SchemaIdentity() != before.SchemaIdentity() {
		t.Fatalf("time travel schema %s, want %s", old.SchemaIdentity(), before.SchemaIdentity())
	}
	if got := ask(t, old, qOld); got != wantOld {
		t.Fatalf("time travel: %s, want %s", got, wantOld)
	}
	if got := ask(t, old, qOldEdges); got != wantOldEdges {
		t.Fatalf("time travel edges: %s, want %s", got, wantOldEdges)
	}
	// The lock branch is gone and branches work again.
	if _, err := g.Snapshot(ctx, manifest.SchemaApplyLockBranch); !errors.Is(err, manifest.ErrBranchNotFound) {
		t.Fatalf("lock branch after apply: %v, want not found", err)
	}
	if _, err := g.CreateBranch(ctx, "feature", "main"); err != nil {
		t.Fatalf("branch create after apply: %v", err)
	}
	// Applying the same schema again is a no-op.
	again, err := schema.Apply(ctx, g, migrated(t), schema.ApplyOptions{})
	if err != nil || !again.NoOp {
		t.Fatalf("second apply: %+v, %v; want a no-op", again, err)
	}
}

func reopen(t testing.TB, store backend.StorageAdapter) *graph.Graph {
	t.Helper()
	g, err := graph.Open(context.Background(), store, graph.OpenOptions{Process: graph.NewProcess()})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	return g
}

// TestApplyRefusedChangesNothing: a plan with a refused step, and a graph
// with another branch, are refused with the reason, and nothing at all is
// written; once the branch is gone the apply runs.
func TestApplyRefusedChangesNothing(t *testing.T) {
	ctx := context.Background()
	cs := counter.New(mem.New())
	g := seeded(t, cs)
	writes := func() int {
		n := cs.Snapshot()
		return n.Of(counter.Put) + n.Of(counter.CondPut) + n.Of(counter.Delete)
	}
	before := head(t, g)

	cs.Reset()
	_, err := schema.Apply(ctx, g, edit(t, "email: String?", "email: String?\n  city: String"), schema.ApplyOptions{})
	var re *schema.RefusedError
	if !errors.As(err, &re) || !errors.Is(err, schema.ErrRefused) || !strings.Contains(err.Error(), schema.CodeRequiredProperty) {
		t.Fatalf("apply of a refused plan: %v", err)
	}
	if writes() != 0 {
		t.Fatalf("a refused apply made %d writes", writes())
	}

	if _, err := g.CreateBranch(ctx, "review", "main"); err != nil {
		t.Fatal(err)
	}
	cs.Reset()
	_, err = schema.Apply(ctx, g, migrated(t), schema.ApplyOptions{PlanOptions: schema.PlanOptions{AllowDataLoss: true}})
	if !errors.Is(err, schema.ErrBranchesExist) || !strings.Contains(err.Error(), "review") || !strings.Contains(err.Error(), "branch delete") {
		t.Fatalf("apply with a branch: %v", err)
	}
	if writes() != 0 {
		t.Fatalf("an apply refused for a branch made %d writes", writes())
	}
	if s := head(t, g); s.Version() != before.Version() || s.SchemaIdentity() != before.SchemaIdentity() {
		t.Fatalf("main moved: version %d identity %s", s.Version(), s.SchemaIdentity())
	}
	if err := g.DeleteBranch(ctx, "review"); err != nil {
		t.Fatal(err)
	}
	if _, err := schema.Apply(ctx, g, migrated(t), schema.ApplyOptions{PlanOptions: schema.PlanOptions{AllowDataLoss: true}}); err != nil {
		t.Fatalf("apply once the branch is gone: %v", err)
	}
}

// TestApplyRaceOneWins: a second apply started while the first holds the
// schema-apply lock (another process, so no shared gate) refuses with
// ErrSchemaLocked and writes nothing to main; the first commits; a branch
// create during the apply is refused and leaves no branch.
func TestApplyRaceOneWins(t *testing.T) {
	ctx := context.Background()
	store := mem.New()
	g := seeded(t, store)
	other := reopen(t, store)
	var raceErr, branchErr error
	res, err := schema.Apply(ctx, g, migrated(t), schema.ApplyOptions{
		PlanOptions: schema.PlanOptions{AllowDataLoss: true},
		AfterPrepare: func(ctx context.Context) error {
			_, raceErr = schema.Apply(ctx, other, base+"node Tag2 { slug: String @key }", schema.ApplyOptions{})
			_, branchErr = other.CreateBranch(ctx, "sneaky", "main")
			return nil
		},
	})
	if err != nil || res.Commit == nil {
		t.Fatalf("first apply: %+v, %v", res, err)
	}
	if !errors.Is(raceErr, graph.ErrSchemaLocked) {
		t.Fatalf("racing apply: %v, want ErrSchemaLocked", raceErr)
	}
	if !errors.Is(branchErr, graph.ErrSchemaLocked) {
		t.Fatalf("branch create during the apply: %v, want ErrSchemaLocked", branchErr)
	}
	bs, err := g.Branches(ctx)
	if err != nil || len(bs) != 1 {
		t.Fatalf("branches %+v (%v): want only main", bs, err)
	}
	s := head(t, reopen(t, store))
	if s.SchemaIdentity() != compile(t, migrated(t)).Identity {
		t.Fatal("the winner's schema is not the accepted one")
	}
	if got := ask(t, s, qNew); got != wantNew {
		t.Fatalf("after the race: %s", got)
	}
}

// TestApplyFencesConcurrentWriters: writers that race an apply never leave
// a mixed result. A load that commits while the apply is prepared makes
// the apply re-plan, so its row is converted too; a write prepared against
// the old schema before the apply commits is refused (nothing written)
// and its retry runs on the new schema.
func TestApplyFencesConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	store := mem.New()
	g := seeded(t, store)
	other := reopen(t, store) // another process: no shared gates
	attempts := 0
	_, err := schema.Apply(ctx, g, migrated(t), schema.ApplyOptions{
		PlanOptions: schema.PlanOptions{AllowDataLoss: true},
		AfterPrepare: func(ctx context.Context) error {
			attempts++
			if attempts == 1 {
				if _, err := load.Run(ctx, other, strings.NewReader(`{"type":"Person","data":{"handle":"p9","name":"Late","nick":"z"}}`), load.Options{Mode: load.Append}); err != nil {
					return err
				}
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if attempts != 2 {
		t.Fatalf("apply ran %d attempts; the racing load should force exactly one re-plan", attempts)
	}
	s := head(t, reopen(t, store))
	if got, want := ask(t, s, qNew), "[[p1 a <nil> <nil>] [p2 a <nil> <nil>] [p3 <nil> <nil> happy] [p9 z <nil> <nil>]]"; got != want {
		t.Fatalf("after the race: %s, want %s", got, want)
	}

	// A write prepared against the old schema, committed after an apply.
	store2 := mem.New()
	g2 := seeded(t, store2)
	w, err := g2.BeginWrite(ctx, "main", graph.WriteOptions{Kind: graph.KindLoad, Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	oldPin, _ := w.Snapshot().Pin("node:Person")
	if err := w.Stage(ctx, "node:Person", func(ctx context.Context, ds *table.Dataset) (*table.Staged, error) {
		return ds.StageOverwrite(ctx) // an old-schema overwrite: empties Person
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := schema.Apply(ctx, reopen(t, store2), migrated(t), schema.ApplyOptions{PlanOptions: schema.PlanOptions{AllowDataLoss: true}}); err != nil {
		t.Fatal(err)
	}
	_, err = w.Commit(ctx)
	if !errors.Is(err, graph.ErrReadSetChanged) {
		t.Fatalf("old-schema write after the apply: %v, want ReadSetChanged", err)
	}
	s2 := head(t, reopen(t, store2))
	if got := ask(t, s2, qNew); got != wantNew {
		t.Fatalf("the stale write changed data: %s", got)
	}
	if pin, _ := s2.Pin("node:Person"); pin.Version != oldPin.Version+1 {
		t.Fatalf("Person pin %+v: want exactly the apply's rewrite on %d", pin, oldPin.Version)
	}
}

// TestApplyCrashAtEveryWrite: the store crashes at (and, separately, right
// after) every write the apply makes; a fresh process then opens the graph
// read-write (the recovery sweep runs) and finds either the old schema with
// the old answers or the new schema with the new answers, never a mix; it
// takes a write, and an apply (breaking the interrupted apply's lock)
// completes with the new answers.
func TestApplyCrashAtEveryWrite(t *testing.T) {
	ctx := context.Background()
	newID := compile(t, migrated(t)).Identity
	opts := schema.ApplyOptions{PlanOptions: schema.PlanOptions{AllowDataLoss: true}}
	for _, mode := range []string{"at", "after"} {
		outcomes := map[string]int{}
		for k := 1; ; k++ {
			inner := mem.New()
			inj := fault.New(inner)
			g := seeded(t, inj)
			g.Manifest().SetSleeper(instant) // lost publish answers re-issue at once
			oldID := head(t, g).SchemaIdentity()
			inj.Reset()
			if mode == "at" {
				inj.CrashAtWrite(k)
			} else {
				inj.CrashAfterWrite(k)
			}
			_, runErr := schema.Apply(ctx, g, migrated(t), opts)
			crashed, writes := inj.Crashed(), inj.Writes()
			inj.Heal()
			where := fmt.Sprintf("crash %s write %d", mode, k)
			if !crashed && runErr != nil {
				t.Fatalf("%s: apply failed without a crash: %v", where, runErr)
			}
			// A read-only open (no recovery) and a read-write one (the
			// sweep runs) each read one consistent schema and data pair.
			ro, err := graph.Open(ctx, inner, graph.OpenOptions{ReadOnly: true, Process: graph.NewProcess()})
			if err != nil && !errors.Is(err, graph.ErrRecoveryRequired) {
				t.Fatalf("%s: read-only open: %v", where, err)
			}
			if err == nil {
				consistent(t, where+" (read-only)", head(t, ro), oldID, newID)
			}
			re := reopen(t, inner)
			s := head(t, re)
			outcomes[consistent(t, where, s, oldID, newID)]++
			if _, err := load.Run(ctx, re, strings.NewReader(`{"type":"Team","data":{"slug":"t9","tier":"free"}}`), load.Options{Mode: load.Append}); err != nil && s.SchemaIdentity() == oldID {
				t.Fatalf("%s: a write after recovery: %v", where, err)
			}
			o := opts
			o.BreakStaleLock = true
			if _, err := schema.Apply(ctx, re, migrated(t), o); err != nil {
				t.Fatalf("%s: apply after recovery: %v", where, err)
			}
			s = head(t, re)
			if s.SchemaIdentity() != newID || ask(t, s, qNew) != wantNew || ask(t, s, qNewEdges) != wantNewEdges {
				t.Fatalf("%s: after the second apply: %s %s", where, ask(t, s, qNew), ask(t, s, qNewEdges))
			}
			if held, err := re.SchemaLockHeld(ctx); err != nil || held {
				t.Fatalf("%s: the schema-apply lock is still held after the second apply (%v)", where, err)
			}
			if !crashed || writes < k {
				t.Logf("crash %s: apply makes %d writes; outcomes %v", mode, k-1, outcomes)
				if outcomes["old"] == 0 || outcomes["new"] == 0 {
					t.Fatalf("crash %s: outcomes %v; the crash points should reach both sides of the publish", mode, outcomes)
				}
				break
			}
		}
	}
}

func instant(ctx context.Context, _ time.Duration) error { return ctx.Err() }

// consistent checks a snapshot after a crashed apply: the old schema with
// the old answers, or the new one with the new answers. It returns which.
func consistent(t *testing.T, where string, s *graph.Snapshot, oldID, newID string) string {
	t.Helper()
	switch s.SchemaIdentity() {
	case oldID:
		if got := ask(t, s, qOld); got != wantOld {
			t.Fatalf("%s: old schema, answers %s", where, got)
		}
		if got := ask(t, s, qOldEdges); got != wantOldEdges {
			t.Fatalf("%s: old schema, edges %s", where, got)
		}
		return "old"
	case newID:
		if got := ask(t, s, qNew); got != wantNew {
			t.Fatalf("%s: new schema, answers %s", where, got)
		}
		if got := ask(t, s, qNewEdges); got != wantNewEdges {
			t.Fatalf("%s: new schema, edges %s", where, got)
		}
		return "new"
	}
	t.Fatalf("%s: schema %s is neither the old nor the new one", where, s.SchemaIdentity())
	return ""
}

// TestApplyEachSupportedKind applies each supported step kind alone on the
// seeded graph and pins what it did to the data and to later writes.
func TestApplyEachSupportedKind(t *testing.T) {
	ctx := context.Background()
	insert := func(g *graph.Graph, line string) error {
		_, err := load.Run(ctx, g, strings.NewReader(line), load.Options{Mode: load.Append})
		return err
	}
	cases := []struct {
		name      string
		src       string
		allowLoss bool
		query     string
		want      string
		// write, when set, must fail (wantErr) or succeed after the apply.
		write   string
		wantErr bool
	}{
		{name: "add_type node", src: base + "node Tag { slug: String @key }",
			write: `{"type":"Tag","data":{"slug":"x"}}`, query: `query q() { match { $t: Tag } return { $t.slug } }`, want: "[[x]]"},
		{name: "add_type edge", src: base + "edge Likes: Person -> Team",
			write: `{"edge":"Likes","from":"p2","to":"t1"}`, query: `query q() { match { $p: Person  $p likes $t } return { $p.handle, $t.slug } }`, want: "[[p2 t1]]"},
		{name: "rename_type node", src: edit(t, "node Team {", `node Squad @rename_from("Team") {`, "-> Team", "-> Squad"),
			query: `query q() { match { $s: Squad } return { $s.slug, $s.tier } }`, want: "[[t1 pro]]"},
		{name: "rename_type edge", src: edit(t, "edge Knows: Person -> Person", `edge Met: Person -> Person @rename_from("Knows")`),
			query: `query q() { match { $a: Person  $a met $b } return { $a.handle, $b.handle as b } order { $a.handle } }`, want: "[[p1 p2] [p2 p3]]"},
		{name: "add_property nullable", src: edit(t, "email: String?", "email: String?\n  city: String?"),
			write: `{"type":"Person","data":{"handle":"p5","name":"E","city":"Rome"}}`, query: `query q() { match { $p: Person } return { $p.handle, $p.city } order { $p.handle } }`,
			want: "[[p1 <nil>] [p2 <nil>] [p3 <nil>] [p5 Rome]]"},
		{name: "add_property required on an empty type", src: edit(t, "node Empty {", "node Empty {\n  size: I32"),
			write: `{"type":"Empty","data":{"slug":"e"}}`, wantErr: true},
		{name: "rename_property", src: edit(t, "age: I32?", `years: I32? @rename_from("age")`),
			query: `query q() { match { $p: Person } return { $p.handle, $p.years } order { $p.handle } }`, want: "[[p1 10] [p2 20] [p3 30]]"},
		{name: "drop_property", src: edit(t, "email: String?\n", ""), allowLoss: true,
			query: `query q() { match { $p: Person } return { $p.handle, $p.nick } order { $p.handle } }`, want: "[[p1 a] [p2 a] [p3 <nil>]]"},
		{name: "drop_type", src: strings.Replace(base, "edge MemberOf: Person -> Team @card(0..2)", "", 1), allowLoss: true,
			query: `query q() { match { $t: Team } return { $t.slug } }`, want: "[[t1]]"},
		{name: "reorder_properties", src: edit(t, "  age: I32?\n  nick: String?\n", "  nick: String?\n  age: I32?\n"),
			write: `{"type":"Person","data":{"handle":"p5","name":"E","age":5}}`, query: `query q() { match { $p: Person } return { $p.handle, $p.age } order { $p.handle } }`,
			want: "[[p1 10] [p2 20] [p3 30] [p5 5]]"},
		{name: "required to nullable", src: edit(t, "name: String\n", "name: String?\n"),
			write: `{"type":"Person","data":{"handle":"p5"}}`, query: `query q() { match { $p: Person } return { $p.handle, $p.name } order { $p.handle } }`,
			want: "[[p1 Ann] [p2 Bob] [p3 Cy] [p5 <nil>]]"},
		{name: "nullable to required", src: edit(t, "age: I32?", "age: I32"),
			write: `{"type":"Person","data":{"handle":"p5","name":"E"}}`, wantErr: true},
		{name: "extend_enum", src: edit(t, "enum(happy, sad)", "enum(happy, sad, calm)"),
			write: `{"type":"Person","data":{"handle":"p5","name":"E","mood":"calm"}}`, query: `query q() { match { $p: Person { mood: "calm" } } return { $p.handle } }`, want: "[[p5]]"},
		{name: "add_constraint unique", src: edit(t, "email: String?", "email: String? @unique"),
			write: `{"type":"Person","data":{"handle":"p5","name":"E","email":"ann@x.org"}}`, wantErr: true},
		{name: "add_constraint range", src: edit(t, `vec: Vector(2)? @embed("name")`, `vec: Vector(2)? @embed("name")`+"\n  @range(age, 0..100)"),
			write: `{"type":"Person","data":{"handle":"p5","name":"E","age":101}}`, wantErr: true},
		{name: "add_constraint check", src: edit(t, `vec: Vector(2)? @embed("name")`, `vec: Vector(2)? @embed("name")`+"\n  @check(name, \"^[A-Z]\")"),
			write: `{"type":"Person","data":{"handle":"p5","name":"lower"}}`, wantErr: true},
		{name: "add_constraint index", src: edit(t, "nick: String?", "nick: String? @index"),
			query: `query q() { match { $p: Person { nick: "a" } } return { $p.handle } order { $p.handle } }`, want: "[[p1] [p2]]"},
		{name: "drop_constraint card widened", src: edit(t, "@card(0..2)", "@card(0..5)"),
			query: `query q() { match { $p: Person  $p memberOf $t } return { $p.handle } }`, want: "[[p1]]"},
		{name: "update_type_metadata", src: edit(t, `@description("a person")`, `@description("someone")`),
			query: `query q() { match { $p: Person } return { count($p) as n } }`, want: "[[3]]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store := mem.New()
			g := seeded(t, store)
			before := head(t, g)
			res, err := schema.Apply(ctx, g, tc.src, schema.ApplyOptions{PlanOptions: schema.PlanOptions{AllowDataLoss: tc.allowLoss}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Commit == nil || head(t, g).SchemaIdentity() != compile(t, tc.src).Identity {
				t.Fatalf("apply %+v did not commit the new schema", res)
			}
			// A snapshot taken before the apply keeps its schema.
			if got := ask(t, before, qOld); got != wantOld {
				t.Fatalf("the pre-apply snapshot now reads %s", got)
			}
			if tc.write != "" {
				err := insert(g, tc.write)
				if tc.wantErr != (err != nil) {
					t.Fatalf("write %s after the apply: %v (want error: %v)", tc.write, err, tc.wantErr)
				}
			}
			if tc.query != "" {
				for _, h := range []*graph.Graph{g, reopen(t, store)} {
					if got := ask(t, head(t, h), tc.query); got != tc.want {
						t.Fatalf("%s:\n got %s\nwant %s", tc.query, got, tc.want)
					}
				}
			}
		})
	}
}
