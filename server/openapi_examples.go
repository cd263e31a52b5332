package server

import (
	"encoding/json"

	"github.com/omnigraph-go/omnigraph/api"
)

// example is the request and the answer the document shows for a route.
// They are typed values of the route's own request and response types, so
// an example cannot name a member the server refuses; the lint checks them
// against the schemas too (no-invalid-media-type-examples).
type example struct {
	Request, Response any
}

const (
	exCommit  = "01JZ6Y3M2Q8K4T7V9W0XAB1CDE"
	exParent  = "01JZ6Y1F0R5N2P8S6T4VAW3XYZ"
	exMerged  = "01JZ6Y2H7J9K3M5N8P0QRS2TVW"
	exCreated = int64(1767600000000000)
)

func exCommitOutput(branch string, version uint64) *api.CommitOutput {
	return &api.CommitOutput{GraphCommitID: exCommit, GraphBranch: branch, GraphManifestVersion: version, ParentCommitID: exParent, ActorID: "alice", CreatedAt: exCreated}
}

// examples are by operation id; TestOpenAPIExamples requires one for every
// route of the table.
var examples = map[string]example{
	"health": {Response: api.Health{Status: "ok", Version: "v0.4.0", Graphs: 1, Mode: "read-write",
		Build: api.BuildInfo{Version: "v0.4.0", Revision: "72d74768ec2d17456a0d552ebc2d6c0e5ef6abc1", BuildDate: "2026-12-02T06:32:30Z", GoVersion: "go1.26.8"}}},
	"openapi":    {},
	"listGraphs": {Response: api.GraphList{Graphs: []api.GraphItem{{GraphID: "default"}}}},
	"query": {
		Request: api.QueryRequest{Query: "query adults($city: String, $min: I32) { match { $p: Person { city: $city } $p.age >= $min } return { $p.handle, $p.age } order { $p.age desc } }", Params: map[string]any{"city": "Berlin", "min": 30}, Branch: "main"},
		Response: api.ReadOutput{QueryName: "adults", Target: api.ReadTarget{Branch: "main"}, RowCount: 1, Columns: []string{"p.handle", "p.age"},
			Rows: []json.RawMessage{json.RawMessage(`{"p.handle":"carol","p.age":36}`)}, GraphCommitID: exCommit},
	},
	"mutate": {
		Request:  api.MutateRequest{Query: `mutation add($h: String, $name: String, $age: I32) { insert Person { handle: $h, name: $name, age: $age } }`, Params: map[string]any{"h": "quinn", "name": "Quinn Park", "age": 34}, Branch: "main"},
		Response: api.ChangeOutput{Branch: "main", QueryName: "add", AffectedNodes: 1, ActorID: "alice", Commit: exCommitOutput("main", 7)},
	},
	"mutateIfGraphCommit": {
		Request:  api.MutateRequest{Query: `mutation older($h: String) { update Person set { age: 35 } where handle = $h }`, Params: map[string]any{"h": "quinn"}},
		Response: api.ChangeOutput{Branch: "main", QueryName: "older", AffectedNodes: 1, ActorID: "alice", Commit: exCommitOutput("main", 8)},
	},
	"load": {
		Request: api.LoadRequest{Records: []map[string]any{
			{"type": "Person", "data": map[string]any{"handle": "ada", "name": "Ada Lovelace", "age": 36}},
			{"edge": "Knows", "from": "ada", "to": "alice", "data": map[string]any{"since": "2026-01-05"}},
		}, Branch: "import", From: "main", Mode: "merge"},
		Response: api.LoadOutput{Branch: "import", BaseBranch: "main", BranchCreated: true, Mode: "merge", Nodes: 1, Edges: 1,
			Types: map[string]int{"Person": 1, "Knows": 1}, TotalEntities: 2, ActorID: "alice", Commit: exCommitOutput("import", 2)},
	},
	"export": {Response: "{\"type\":\"Person\",\"data\":{\"handle\":\"ada\",\"name\":\"Ada Lovelace\",\"age\":36}}\n{\"edge\":\"Knows\",\"from\":\"ada\",\"to\":\"alice\",\"data\":{\"since\":\"2026-01-05\"}}\n"},
	"loadNdjson": {
		Request: "{\"type\":\"Person\",\"data\":{\"handle\":\"ada\",\"name\":\"Ada Lovelace\",\"age\":36}}\n{\"edge\":\"Knows\",\"from\":\"ada\",\"to\":\"alice\"}\n",
		Response: api.LoadOutput{Branch: "main", Mode: "merge", Nodes: 1, Edges: 1, Types: map[string]int{"Person": 1, "Knows": 1},
			TotalEntities: 2, ActorID: "alice", Commit: exCommitOutput("main", 9)},
	},
	"mcp": {
		Request:  api.JSONRPCMessage{JSONRPC: "2.0", ID: 1, Method: "tools/call", Params: map[string]any{"name": "branch_list", "arguments": map[string]any{}}},
		Response: api.JSONRPCMessage{JSONRPC: "2.0", ID: 1, Result: map[string]any{"structuredContent": map[string]any{"branches": []string{"main"}}}},
	},
	"getSnapshot": {Response: api.SnapshotOutput{GraphBranch: "main", GraphManifestVersion: 7, GraphCommitID: exCommit, InternalSchemaVersion: 1, SchemaIdentity: "sha256:4f2a",
		Datasets: []api.DatasetOutput{{TypeName: "Person", EntityKind: "node", PublishedDatasetVersion: 3, EntityCount: 42}}}},
	"getSchema":    {Response: api.SchemaOutput{SchemaSource: "node Person {\n  handle: String @key\n  name: String\n  age: I32?\n}\n", SchemaIdentity: "sha256:4f2a", Branch: "main"}},
	"listBranches": {Response: api.BranchList{Branches: []string{"main", "review"}, Heads: []api.BranchHead{{Name: "main", Incarnation: 1, GraphManifestVersion: 7}, {Name: "review", Incarnation: 1, GraphManifestVersion: 2}}}},
	"createBranch": {
		Request:  api.BranchCreateRequest{Name: "review", From: "main"},
		Response: api.BranchCreateOutput{Name: "review", From: "main", GraphCommitID: exCommit, Incarnation: 1, ActorID: "alice"},
	},
	"mergeBranch": {
		Request: api.MergeRequest{Source: "review", Target: "main", DeleteBranch: true},
		Response: api.MergeOutput{Source: "review", Target: "main", Outcome: "merged", SourceCommit: exMerged, BaseCommit: exParent, ActorID: "alice",
			Commit:   &api.CommitOutput{GraphCommitID: exCommit, GraphBranch: "main", GraphManifestVersion: 8, ParentCommitID: exParent, MergedParentCommitID: exMerged, ActorID: "alice", CreatedAt: exCreated},
			Inserted: 2, Updated: 1, BranchDeleted: boolPtr(true)},
	},
	"deleteBranch": {Response: api.BranchDeleteOutput{Name: "review", ActorID: "alice"}},
	"listCommits":  {Response: api.CommitList{Commits: []api.CommitOutput{*exCommitOutput("main", 7)}}},
	"getCommit":    {Response: *exCommitOutput("main", 7)},
	"getCommitChanges": {Response: api.ChangesOutput{Cause: *exCommitOutput("main", 7), Changes: []api.Change{
		{EntityKind: "node", TypeName: "Person", ID: "quinn", Op: "insert", After: map[string]any{"handle": "quinn", "name": "Quinn Park", "age": 34}},
		{EntityKind: "node", TypeName: "Person", ID: "ada", Op: "update", Before: map[string]any{"handle": "ada", "name": "Ada Lovelace", "age": 36}, After: map[string]any{"handle": "ada", "name": "Ada Lovelace", "age": 37}},
	}}},
	// The console's routes.
	"getStatus": {Response: api.StatusOutput{GraphID: "default", ServerVersion: "v0.4.0", Mode: "read-write", StorageKind: "s3", Actor: "alice", Auth: true,
		AllowedActions: []string{"read", "change", "load", "export", "branch_create", "branch_delete", "branch_merge"},
		Lock:           api.LockOutput{Held: true, Operation: "serve", Host: "db-1", PID: 4242, BinaryVersion: "v0.4.0", Since: "2026-01-05T08:00:00Z", Leased: true, LeaseSeconds: 30, LastHeartbeat: "2026-01-05T09:59:50Z"},
		Recovery:       api.RecoveryOutput{Intents: []api.IntentOutput{}, State: "clean"},
		AutoOptimize:   api.AutoOptimizeOutput{Enabled: true, Runs: 12, LastBranch: "main", LastAt: "2026-01-05T09:58:00Z", LastOutcome: "nothing_to_do"},
		Branches:       2, MainHead: exCommitOutput("main", 7),
		Limits: api.StatusLimits{BodyBytes: 1 << 20, LoadBytes: 32 << 20, WritesPerActor: 16, WritesPerGraph: 64}}},
	"getCatalog": {Response: api.CatalogOutput{Target: api.ReadTarget{Branch: "main"}, GraphCommitID: exCommit, SchemaIdentity: "sha256:4f2a",
		Nodes: []api.CatalogType{{Name: "Person", Key: []string{"handle"}, Properties: []api.CatalogProperty{
			{Name: "handle", Type: "String", Key: true, Unique: true, Index: true}, {Name: "age", Type: "I32", Nullable: true}}, Rows: 30}},
		Edges: []api.CatalogType{{Name: "Knows", From: "Person", To: "Person", Cardinality: "0..*", Properties: []api.CatalogProperty{{Name: "since", Type: "Date", Nullable: true}}, Rows: 90}}}},
	"checkQuery": {
		Request: api.CheckRequest{Query: "query adults($min: I32) {\n  match { $p: Person  $p.age >= $min }\n  return { $p.nme }\n}", Branch: "main"},
		Response: api.CheckOutput{SchemaIdentity: "sha256:4f2a", Queries: []api.CheckedQuery{{Name: "adults", Kind: "read", Line: 1, Params: []api.CheckParam{{Name: "min", Type: "I32"}}}},
			Errors:   []api.CheckError{{Code: "GQ011", LintCode: "T2", Query: "adults", Line: 3, Column: 12, Message: `Person has no property "nme" ($p is a Person); did you mean name?`}},
			Warnings: []api.CheckError{}},
	},
	"listBranchHeads": {Response: api.BranchHeadsOutput{Base: "main", Branches: []api.BranchStatus{
		{Name: "main", Head: *exCommitOutput("main", 7), AllowedActions: []string{"change", "load", "branch_create"}},
		{Name: "review", Head: *exCommitOutput("review", 3), Ahead: 2, Behind: 1, AllowedActions: []string{"change", "load", "branch_delete", "branch_merge", "branch_create"}},
	}}},
	"previewMerge": {
		Request: api.MergePreviewRequest{Source: "review", Target: "main", Limit: 100},
		Response: api.MergePreviewOutput{Source: "review", Target: "main", Outcome: "merged", SourceCommit: exMerged, BaseCommit: exParent, Inserted: 1,
			Changes:   []api.Change{{EntityKind: "node", TypeName: "Person", ID: "quinn", Op: "insert", After: map[string]any{"handle": "quinn", "name": "Quinn Park", "age": 34}}},
			Conflicts: []api.MergeConflict{}},
	},
	"diffRefs": {
		Request: api.DiffRequest{From: "main", To: "review", Type: "Person", Limit: 100},
		Response: api.DiffOutput{From: "main", To: "review", FromCommit: exParent, ToCommit: exCommit, Changes: []api.Change{
			{EntityKind: "node", TypeName: "Person", ID: "ada", Op: "update", Before: map[string]any{"handle": "ada", "age": 36}, After: map[string]any{"handle": "ada", "age": 37}}}},
	},
	// A Blob answer is the value's raw bytes (TestServerBlob drives the
	// routes on a graph with Blob properties).
	"getBlob":  {Response: "%PDF-1.7 ..."},
	"headBlob": {Response: ""},
	"pollChanges": {Response: api.ChangeFeedOutput{Branch: "main", Blocks: []api.ChangeBlock{{
		Cause:   api.ChangeCause{GraphCommitID: exCommit, ParentCommitID: exParent, AuthoredBranch: "main", GraphManifestVersion: 7, ActorID: "alice", AuthoredAt: exCreated},
		Changes: []api.Change{{EntityKind: "node", TypeName: "Person", ID: "ada", Op: "update", Before: map[string]any{"handle": "ada", "age": 36}, After: map[string]any{"handle": "ada", "age": 37}}},
	}}, Cursor: exCursor, CaughtUp: true, HeadCommitID: exCommit}},
	"captureChangeBaseline": {
		Request:  api.BaselineRequest{Branch: "main", Types: []string{"Person"}},
		Response: "{\"type\":\"Person\",\"data\":{\"handle\":\"ada\",\"name\":\"Ada Lovelace\",\"age\":37}}\n{\"baseline\":{\"snapshot_commit_id\":\"" + exCommit + "\",\"resume_cursor\":\"" + exCursor + "\"}}\n",
	},
	"listQueries": {Response: api.QueryCatalog{Queries: []api.StoredQuery{{Name: "city_adults", ToolName: "city_adults", Description: "people of a city at least min years old",
		Params:      []api.QueryParam{{Name: "city", Type: "String", Kind: "string", Schema: map[string]any{"type": "string"}}, {Name: "min", Type: "I32", Kind: "int", Schema: map[string]any{"type": "integer"}}},
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}, "min": map[string]any{"type": "integer"}}, "required": []string{"city", "min"}, "additionalProperties": false}}}}},
	"invokeQuery": {
		Request: api.InvokeRequest{Params: map[string]any{"city": "Berlin", "min": 30}, Branch: "main"},
		Response: api.ReadOutput{QueryName: "city_adults", Target: api.ReadTarget{Branch: "main"}, RowCount: 1, Columns: []string{"p.handle", "p.name", "p.age"},
			Rows: []json.RawMessage{json.RawMessage(`{"p.handle":"carol","p.name":"Carol Kim","p.age":36}`)}, GraphCommitID: exCommit},
	},
	"invokeQueryIfGraphCommit": {
		Request:  api.InvokeRequest{Params: map[string]any{"h": "quinn", "name": "Quinn Park", "age": 34, "city": "Berlin", "company": "acme", "title": "Engineer", "since": "2026-01-05"}},
		Response: api.ChangeOutput{Branch: "main", QueryName: "hire", AffectedNodes: 1, AffectedEdges: 1, ActorID: "alice", Commit: exCommitOutput("main", 8)},
	},
}

// exCursor is an example cursor (opaque: clients pass it back unchanged).
const exCursor = "ogc1.eyJ2IjoxLCJnIjoiMDFKWjZYIn0"

func boolPtr(b bool) *bool { return &b }
