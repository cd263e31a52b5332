package schema

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/lang/pg"
	"github.com/omnigraph-go/omnigraph/manifest"
	"github.com/omnigraph-go/omnigraph/table"
)

// ErrBranchesExist: schema apply runs only while main is the only branch.
var ErrBranchesExist = errors.New("schema apply needs main to be the only branch")

// ApplyOptions shape an Apply.
type ApplyOptions struct {
	PlanOptions
	// Actor recorded on the commit ("" : the handle's).
	Actor string
	// BreakStaleLock: the caller knows no other schema apply is running
	// (it holds the graph's cluster lock), so a schema-apply lock it finds
	// was left by an interrupted apply and is removed.
	BreakStaleLock bool
	// Retries bounds re-planning after main moved before any effect (0:
	// graph.DefaultWriteRetries).
	Retries int
	// AfterPrepare, when set (tests), runs after the attempt is staged and
	// before its commit.
	AfterPrepare func(ctx context.Context) error
}

// ApplyResult reports an Apply.
type ApplyResult struct {
	Plan *Plan `json:"plan"`
	// NoOp: the schema was already the desired one; nothing was written.
	NoOp   bool              `json:"no_op"`
	Commit *graph.CommitInfo `json:"commit,omitempty"`
	// Tables are the tables the commit rewrote or created (new keys).
	Tables []string `json:"tables"`
}

// Apply makes desired (a .pg source) the accepted schema of main, as one
// graph commit. It refuses, changing nothing: a schema that does not
// compile (graph.ErrInvalidSchema), a plan with a refused step
// (*RefusedError), another apply holding the schema-apply lock
// (graph.ErrSchemaLocked), and a graph with branches other than main
// (ErrBranchesExist).
func Apply(ctx context.Context, g *graph.Graph, desiredSrc string, opts ApplyOptions) (*ApplyResult, error) {
	desired, err := pg.Compile(desiredSrc)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", graph.ErrInvalidSchema, err)
	}
	// Refusals that need no lock are found first, so a refused apply
	// writes nothing at all; the locked attempt checks everything again.
	pre, err := precheck(ctx, g, desired, opts)
	if err != nil {
		return nil, err
	}
	if pre.NoOp {
		// Nothing to apply; an interrupted apply's lock (its commit
		// published, the lock not yet removed) is cleared when allowed.
		if opts.BreakStaleLock {
			held, err := g.SchemaLockHeld(ctx)
			if err != nil {
				return nil, err
			}
			if held {
				unlock, err := g.LockSchema(ctx, true)
				if err != nil {
					return nil, err
				}
				if err := unlock(ctx); err != nil {
					return nil, err
				}
			}
		}
		return &ApplyResult{Plan: pre, NoOp: true, Tables: []string{}}, nil
	}
	unlock, err := g.LockSchema(ctx, opts.BreakStaleLock)
	if err != nil {
		return nil, err
	}
	res, err := applyLocked(ctx, g, desired, opts)
	if uerr := unlock(context.WithoutCancel(ctx)); uerr != nil && err == nil {
		err = fmt.Errorf("the schema apply committed, but: %w", uerr)
	}
	return res, err
}

// precheck refuses, before the lock, a graph with other branches and a
// plan with a refused step.
func precheck(ctx context.Context, g *graph.Graph, desired *pg.Catalog, opts ApplyOptions) (*Plan, error) {
	snap, err := g.Snapshot(ctx, manifest.MainBranch)
	if err != nil {
		return nil, err
	}
	plan, err := Compute(ctx, snap, desired, opts.PlanOptions)
	if err != nil {
		return nil, err
	}
	if plan.NoOp {
		return plan, nil
	}
	if err := onlyMain(ctx, g); err != nil {
		return nil, err
	}
	if !plan.Supported {
		return nil, &RefusedError{Plan: plan}
	}
	return plan, nil
}

func onlyMain(ctx context.Context, g *graph.Graph) error {
	branches, err := g.Branches(ctx)
	if err != nil {
		return err
	}
	var others []string
	for _, b := range branches {
		if b.Name != manifest.MainBranch {
			others = append(others, b.Name)
		}
	}
	if len(others) > 0 {
		return fmt.Errorf("%w: branches %s exist; merge each into main ('omnigraph branch merge NAME') or drop it ('omnigraph branch delete NAME'), then apply again",
			ErrBranchesExist, strings.Join(others, ", "))
	}
	return nil
}

func applyLocked(ctx context.Context, g *graph.Graph, desired *pg.Catalog, opts ApplyOptions) (*ApplyResult, error) {
	if err := onlyMain(ctx, g); err != nil {
		return nil, err
	}
	n := opts.Retries
	if n <= 0 {
		n = graph.DefaultWriteRetries
	}
	var out *ApplyResult
	_, err := graph.Retry(ctx, n, func(ctx context.Context) (*graph.Result, error) {
		r, gr, err := attempt(ctx, g, desired, opts)
		out = r
		return gr, err
	})
	if err != nil {
		return out, err
	}
	return out, nil
}

// attempt plans against main's head and commits the plan.
func attempt(ctx context.Context, g *graph.Graph, desired *pg.Catalog, opts ApplyOptions) (*ApplyResult, *graph.Result, error) {
	w, err := g.BeginWrite(ctx, manifest.MainBranch, graph.WriteOptions{
		Kind: graph.KindSchemaApply, SchemaExclusive: true, SchemaIdentity: desired.Identity, Actor: opts.Actor,
	})
	if err != nil {
		return nil, nil, err
	}
	snap := w.Snapshot()
	plan, err := Compute(ctx, snap, desired, opts.PlanOptions)
	if err != nil {
		return nil, nil, err
	}
	res := &ApplyResult{Plan: plan, Tables: []string{}}
	if plan.NoOp {
		res.NoOp = true
		return res, &graph.Result{NoOp: true, Snapshot: snap}, nil
	}
	if !plan.Supported {
		return res, nil, &RefusedError{Plan: plan}
	}
	if err := putSchema(ctx, g.Store(), desired); err != nil {
		return res, nil, err
	}
	var created []string // fresh table paths, unreferenced until the publish
	dropCreated := func() {
		for _, p := range created {
			_ = table.Drop(context.WithoutCancel(ctx), g.Store(), p)
		}
	}
	var pins []manifest.TablePin
	for _, tc := range plan.types {
		if tc.new == nil {
			continue // dropped: its pin is left out
		}
		switch {
		case tc.old == nil || tc.rewrite && tc.old.key != tc.new.key:
			// A new type, or a renamed one whose columns change: a new
			// table at a path no version references.
			pin, err := freshTable(ctx, g.Store(), snap, tc, w.OperationID())
			if pin.Path != "" {
				created = append(created, pin.Path)
			}
			if err != nil {
				dropCreated()
				return res, nil, err
			}
			pins = append(pins, pin)
			res.Tables = append(res.Tables, tc.new.key)
		default:
			old, _ := snap.Pin(tc.old.key)
			pins = append(pins, manifest.TablePin{Key: tc.new.key, Path: old.Path, Branch: old.Branch, Version: old.Version})
			if tc.rewrite {
				tc := tc
				if err := w.Stage(ctx, tc.old.key, func(ctx context.Context, base *table.Dataset) (*table.Staged, error) {
					recs, err := convert(ctx, base, tc)
					if err != nil {
						return nil, err
					}
					defer release(recs)
					return base.StageOverwriteWithSchema(ctx, tc.new.schema, recs...)
				}); err != nil {
					dropCreated()
					return res, nil, err
				}
				res.Tables = append(res.Tables, tc.new.key)
			}
		}
	}
	sort.Strings(res.Tables)
	if err := w.SetTables(pins); err != nil {
		dropCreated()
		return res, nil, err
	}
	if opts.AfterPrepare != nil {
		if err := opts.AfterPrepare(ctx); err != nil {
			dropCreated()
			return res, nil, err
		}
	}
	gr, err := w.Commit(ctx)
	if err != nil {
		var rsc *graph.ReadSetChanged
		if errors.As(err, &rsc) {
			// Nothing of this attempt is published: its fresh tables are
			// garbage (another attempt plans anew).
			dropCreated()
		}
		return res, nil, err
	}
	c := gr.Commit
	res.Commit = &c
	return res, gr, nil
}

// putSchema stores the accepted source under its identity (one conditional
// create); an existing copy with the same bytes is adopted.
func putSchema(ctx context.Context, store backend.StorageAdapter, cat *pg.Catalog) error {
	key := manifest.SchemaKey(cat.Identity)
	_, err := store.PutIfAbsent(ctx, key, []byte(cat.Source))
	if err == nil {
		return nil
	}
	if !errors.Is(err, backend.ErrPrecondition) && !errors.Is(err, backend.ErrUnknown) {
		return fmt.Errorf("store the new schema (nothing was changed): %w", err)
	}
	got, _, gerr := store.Get(ctx, key)
	if gerr != nil {
		return fmt.Errorf("store the new schema (nothing was changed): %w (reading it back: %v)", err, gerr)
	}
	if !bytes.Equal(got, []byte(cat.Source)) {
		// Same identity, other formatting: the stored copy compiles to the
		// same catalog, so it serves.
		if c, cerr := pg.Compile(string(got)); cerr != nil || c.Identity != cat.Identity {
			return fmt.Errorf("%w: the stored source of schema %s does not match it", manifest.ErrCorrupt, cat.Identity)
		}
	}
	return nil
}

// freshTable creates the table of a new type (empty), or of a renamed type
// whose columns change (its rows converted), at the type's default path
// when no table was ever there, else at a path named for this operation.
func freshTable(ctx context.Context, store backend.StorageAdapter, snap *graph.Snapshot, tc *typeChange, opID string) (manifest.TablePin, error) {
	path := graph.NodeTablePath(tc.new.name)
	if tc.new.kind == "edge" {
		path = graph.EdgeTablePath(tc.new.name)
	}
	taken, err := table.Exists(ctx, store, path)
	if err != nil {
		return manifest.TablePin{}, err
	}
	if taken {
		path += "." + strings.ToLower(opID)
	}
	var recs []arrow.Record
	if tc.old != nil {
		ds, err := snap.OpenTable(ctx, tc.old.key)
		if err != nil {
			return manifest.TablePin{}, err
		}
		recs, err = convert(ctx, ds, tc)
		if err != nil {
			return manifest.TablePin{}, err
		}
		defer release(recs)
	}
	st, err := table.StageCreate(ctx, store, path, tc.new.schema, pg.ColID, recs...)
	if err != nil {
		return manifest.TablePin{}, fmt.Errorf("create the table of %s %s: %w", tc.new.kind, tc.new.name, err)
	}
	ds, err := table.Commit(ctx, st)
	if err != nil {
		// The create may have landed: the caller drops the path.
		return manifest.TablePin{Path: path}, fmt.Errorf("create the table of %s %s: %w", tc.new.kind, tc.new.name, err)
	}
	return manifest.TablePin{Key: tc.new.key, Path: path, Branch: ds.Branch(), Version: ds.Version()}, nil
}

// convert reads every live row of base and returns them in the new schema:
// columns renamed or kept through tc.columns, new columns null, dropped
// columns left out.
func convert(ctx context.Context, base *table.Dataset, tc *typeChange) ([]arrow.Record, error) {
	if base.RowCount() == 0 {
		return nil, nil
	}
	recs, err := base.Scan(ctx, table.ScanOptions{})
	if err != nil {
		return nil, fmt.Errorf("read %s to rewrite it: %w", tc.old.key, err)
	}
	defer release(recs)
	out := make([]arrow.Record, 0, len(recs))
	for _, r := range recs {
		n := r.NumRows()
		cols := make([]arrow.Array, 0, tc.new.schema.NumFields())
		for _, f := range tc.new.schema.Fields() {
			src := tc.columns[f.Name]
			if idx := r.Schema().FieldIndices(src); src != "" && len(idx) > 0 {
				c := r.Column(idx[0])
				c.Retain()
				cols = append(cols, c)
				continue
			}
			cols = append(cols, array.MakeArrayOfNull(memory.DefaultAllocator, f.Type, int(n)))
		}
		out = append(out, array.NewRecord(tc.new.schema, cols, n))
		for _, c := range cols {
			c.Release()
		}
	}
	return out, nil
}

func release(recs []arrow.Record) {
	for _, r := range recs {
		r.Release()
	}
}
