package manifest

// Intent is the complete plan of one graph write, fixed before its first
// durable effect. The write pipeline hands it to the recovery layer (which
// persists it as a sidecar in Phase A), so an interrupted write can be rolled
// forward or back without the writer. It lives here, not in package graph,
// because the recovery package may not import graph.
type Intent struct {
	// OperationID is a ULID minted per write attempt.
	OperationID string `json:"operation_id"`
	// Kind is the writer: "mutation", "load", "merge", "schema_apply",
	// "index", "optimize".
	Kind  string `json:"kind"`
	Actor string `json:"actor"`
	// Token is the branch authority the write prepared against.
	Token Token `json:"token"`
	// Tables are the planned physical table effects, sorted by Key.
	Tables []IntentTable `json:"tables"`
	// Entry is the exact manifest version the publish writes (Phase C):
	// its commit id is pre-minted, so a roll-forward keeps it and the actor.
	Entry *Entry `json:"entry"`
}

// Token is a branch-authority token: the branch's incarnation and exact head
// version at capture, and the accepted schema identity. A write that
// prepared against it may only publish while all three are unchanged.
type Token struct {
	Branch         string `json:"branch"`
	Incarnation    uint64 `json:"incarnation"`
	BranchID       string `json:"branch_id"`
	Head           uint64 `json:"head"`
	HeadCommit     string `json:"head_commit"`
	SchemaIdentity string `json:"schema_identity"`
}

// TokenOf returns the token of a manifest version.
func TokenOf(e *Entry) Token {
	return Token{
		Branch:         e.Branch,
		Incarnation:    e.Incarnation,
		BranchID:       e.BranchID,
		Head:           e.Version,
		HeadCommit:     e.Head,
		SchemaIdentity: e.SchemaIdentity,
	}
}

// IntentTable is one planned table effect.
type IntentTable struct {
	Key  string `json:"key"`
	Path string `json:"path"`
	// Branch is the table branch the effect lands on.
	Branch string `json:"branch"`
	// ExpectedVersion is the manifest pin at capture: the table's HEAD on
	// Branch must equal it before the effect (for a first touch, the
	// version the new ref starts from).
	ExpectedVersion uint64 `json:"expected_version"`
	// PlannedVersion is the version the effect commits.
	PlannedVersion uint64 `json:"planned_version"`
	// TxnUUID is the exact transaction identity of the effect.
	TxnUUID string `json:"txn_uuid"`
	// FirstTouch: the write creates the table ref Branch, forked from
	// ForkBranch at ForkVersion.
	FirstTouch  bool   `json:"first_touch,omitempty"`
	ForkBranch  string `json:"fork_branch,omitempty"`
	ForkVersion uint64 `json:"fork_version,omitempty"`
}
