package main

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/omnigraph-go/omnigraph/backend/local"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/table"
)

// stagePerson appends one Person row (id and name = name).
func stagePerson(name string) graph.StageFunc {
	return func(ctx context.Context, base *table.Dataset) (*table.Staged, error) {
		b := array.NewRecordBuilder(memory.DefaultAllocator, base.Schema())
		defer b.Release()
		for i, f := range base.Schema().Fields() {
			if f.Name == "id" || f.Name == "name" {
				b.Field(i).(*array.StringBuilder).Append(name)
			} else {
				b.Field(i).AppendNull()
			}
		}
		return base.StageAppend(ctx, b.NewRecordBatch())
	}
}

func TestCLIRecoveryListAndRepair(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "g")
	mustCLI(t, "init", "--schema", writeSchema(t), dir)
	store, err := local.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	g, err := graph.Open(ctx, store, graph.OpenOptions{Actor: "ada"})
	if err != nil {
		t.Fatal(err)
	}
	// A write stopped after its table commit leaves a pending sidecar.
	clear := graph.Failpoints.Set(g.ID(), graph.FailpointPostPhaseB, func() error { return errors.New("stop") })
	w, err := g.BeginWrite(ctx, "main", graph.WriteOptions{Kind: graph.KindMutation})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Stage(ctx, graph.NodeTableKey("Person"), stagePerson("ada")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(ctx); !errors.Is(err, graph.ErrRecoveryRequired) {
		t.Fatalf("commit: %v", err)
	}
	clear()

	out := mustCLI(t, "recovery", "list", "--store", dir)
	if !strings.Contains(out, "1 pending recovery sidecar") || !strings.Contains(out, w.OperationID()) || !strings.Contains(out, "RolledPastExpected") {
		t.Fatalf("recovery list:\n%s", out)
	}
	// The preview names the interrupted write and changes nothing.
	if out := mustCLI(t, "repair", "--store", dir); !strings.Contains(out, "1 interrupted write") || !strings.Contains(out, w.OperationID()) || !strings.Contains(out, "preview only") {
		t.Fatalf("repair preview with a pending sidecar:\n%s", out)
	}
	// --confirm resolves it first and says what it rolled forward (never
	// "no drift" alone).
	if out := mustCLI(t, "repair", "--confirm", "--store", dir); !strings.Contains(out, "rolled forward") || !strings.Contains(out, w.CommitID()) || !strings.Contains(out, w.OperationID()) {
		t.Fatalf("repair --confirm:\n%s", out)
	}
	var listed struct {
		Recoveries []struct {
			OperationID      string `json:"operation_id"`
			RecoveryKind     string `json:"recovery_kind"`
			RecoveryForActor string `json:"recovery_for_actor"`
			CommitID         string `json:"commit_id"`
		} `json:"recoveries"`
		Pending []any `json:"pending"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, "recovery", "list", "--json", "--store", dir)), &listed); err != nil {
		t.Fatal(err)
	}
	if len(listed.Recoveries) != 1 || len(listed.Pending) != 0 {
		t.Fatalf("recovery list --json: %+v", listed)
	}
	if r := listed.Recoveries[0]; r.OperationID != w.OperationID() || r.RecoveryKind != "RolledForward" || r.RecoveryForActor != "ada" || r.CommitID != w.CommitID() {
		t.Fatalf("audit row %+v", r)
	}

	// Drift no sidecar covers: a table commit the manifest never published.
	s, err := g.Snapshot(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	ds, err := s.OpenTable(ctx, graph.NodeTableKey("Person"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := stagePerson("stray")(ctx, ds)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := table.Commit(ctx, st); err != nil {
		t.Fatal(err)
	}
	out = mustCLI(t, "repair", "--store", dir)
	if !strings.Contains(out, "node:Person") || !strings.Contains(out, "preview only") {
		t.Fatalf("repair preview:\n%s", out)
	}
	if out := mustCLI(t, "repair", "--store", dir); !strings.Contains(out, "preview only") {
		t.Fatalf("a preview changed something:\n%s", out)
	}
	if out := mustCLI(t, "repair", "--confirm", "--store", dir); !strings.Contains(out, "repaired branch main") {
		t.Fatalf("repair --confirm:\n%s", out)
	}
	if out := mustCLI(t, "repair", "--store", dir); !strings.Contains(out, "nothing to repair") {
		t.Fatalf("after repair:\n%s", out)
	}
	if out := mustCLI(t, "recovery", "list", "--store", dir); !strings.Contains(out, "Repaired") {
		t.Fatalf("recovery list after repair:\n%s", out)
	}
}
