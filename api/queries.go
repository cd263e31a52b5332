package api

// Stored queries: a graph's named .gq queries and mutations, registered
// with the server (docs/server.md). GET queries lists them with their
// parameters as JSON Schema; POST queries/NAME runs one.

type (
	// QueryCatalog is GET queries: the stored queries the caller may
	// invoke, by name.
	QueryCatalog struct {
		Queries []StoredQuery `json:"queries"`
	}
	// StoredQuery is one stored query of the catalog.
	StoredQuery struct {
		Name string `json:"name"`
		// ToolName is its MCP tool's name.
		ToolName    string       `json:"tool_name"`
		Description string       `json:"description,omitempty"`
		Instruction string       `json:"instruction,omitempty"`
		Mutation    bool         `json:"mutation"`
		Params      []QueryParam `json:"params"`
		// InputSchema is the JSON Schema of an invocation's params
		// object.
		InputSchema map[string]any `json:"input_schema"`
	}
	// QueryParam is one parameter of a stored query. Kind is string,
	// bool, int, bigint (a JSON string of digits), float, date, datetime,
	// blob, vector or list (ItemKind says of what); Schema is the JSON
	// Schema of its value.
	QueryParam struct {
		Name      string         `json:"name"`
		Type      string         `json:"type"` // the .gq spelling
		Kind      string         `json:"kind"`
		ItemKind  string         `json:"item_kind,omitempty"`
		VectorDim int            `json:"vector_dim,omitempty"`
		Nullable  bool           `json:"nullable"`
		Schema    map[string]any `json:"schema"`
	}
	// InvokeRequest is POST queries/NAME (the body may be empty).
	InvokeRequest struct {
		Params   map[string]any `json:"params,omitempty" jsonschema:"the query's parameters by name"`
		Branch   string         `json:"branch,omitempty" jsonschema:"the branch to read or write (default main)"`
		Snapshot string         `json:"snapshot,omitempty" jsonschema:"a read query only: a graph commit id to read instead of a branch head"`
		// ExpectMutation, when set, must say what the query is: a client
		// that means to read never runs a mutation by a wrong name.
		ExpectMutation *bool `json:"expect_mutation,omitempty" jsonschema:"when set, the call fails unless the query is a mutation (true) or a read (false)"`
	}
	// StoredRunInput is the stored_query_run tool's input.
	StoredRunInput struct {
		Name          string         `json:"name" jsonschema:"the stored query (see stored_query_list)"`
		Params        map[string]any `json:"params,omitempty" jsonschema:"its parameters by name"`
		Branch        string         `json:"branch,omitempty" jsonschema:"the branch (default main)"`
		Snapshot      string         `json:"snapshot,omitempty" jsonschema:"a read query only: a commit id to read"`
		IfGraphCommit string         `json:"if_graph_commit,omitempty" jsonschema:"a mutation only: write only while the branch head is this commit id"`
	}
)

func storedRoutes(g string) []Route {
	return []Route{
		{Method: "GET", Path: g + "/queries", OperationID: "listQueries", Admission: AdmitRead, Answer: AnswerJSON, Summary: "The graph's stored queries the caller may invoke: name, tool name, description, parameters with their JSON Schema", Auth: true, Graph: true, Idempotent: true, Response: "QueryCatalog", Statuses: readErrs},
		{Method: "POST", Path: g + "/queries/{name}", OperationID: "invokeQuery", Admission: AdmitPerCall, Answer: AnswerJSON, Summary: "Run a stored query by name: a read answers as POST query, a mutation as POST mutate", Auth: true, Graph: true, MayWrite: true, Request: "InvokeRequest", Response: "StoredQueryOutput", Statuses: writeErrs},
		{Method: "POST", Path: g + "/queries/{name}/if-graph-commit", OperationID: "invokeQueryIfGraphCommit", Admission: AdmitWrite, Answer: AnswerJSON, Summary: "Run a stored mutation only while the branch head is the given commit", Auth: true, Graph: true, Write: true, Header: HeaderIfGraphCommit, Request: "InvokeRequest", Response: "ChangeOutput", Statuses: append([]int{412}, writeErrs...)},
	}
}
