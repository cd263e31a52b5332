package client_test

import (
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/omnigraph-go/omnigraph/api"
	"github.com/omnigraph-go/omnigraph/client"
)

// TestTypedRows: rows decode into a struct whose json tags name the
// columns (a nullable column into a pointer, a Date as its "YYYY-MM-DD" text, a
// list into a slice), through Rows and QueryRows; a row that does not fit
// T is an error naming the row. Errors expose the envelope's reason.
func TestTypedRows(t *testing.T) {
	ctx := ctxT(t)
	url := exampleGraph(t, filepath.Join(t.TempDir(), "graph"))
	file, secrets := tokens(t, "alice")
	s := serve(t, nil, "--store", url, "--tokens", file)
	g := newClient(t, s.base, secrets["alice"]).Graph("default")

	type person struct {
		Handle    string   `json:"p.handle"`
		Age       *int     `json:"p.age"`
		Joined    string   `json:"p.joined"`
		Interests []string `json:"p.interests"`
	}
	q := api.QueryRequest{Query: `query q() { match { $p: Person $p.handle < "c" } return { $p.handle, $p.age, $p.joined, $p.interests } order { $p.handle } }`}
	people, out, err := client.QueryRows[person](ctx, g, q)
	if err != nil {
		t.Fatal(err)
	}
	age := func(n int) *int { return &n }
	want := []person{
		{Handle: "alice", Age: age(22), Joined: "2018-01-10", Interests: []string{"chess", "cooking"}},
		{Handle: "arthur", Age: age(23), Joined: "2020-06-13", Interests: []string{"cooking", "climbing"}},
		{Handle: "bea", Age: age(30), Joined: "2021-07-14", Interests: []string{"cycling", "databases"}},
		{Handle: "bob", Age: age(29), Joined: "2019-02-11", Interests: []string{"graphs", "climbing"}},
	}
	if !reflect.DeepEqual(people, want) || out.RowCount != len(want) {
		t.Fatalf("QueryRows = %+v (columns %v), want %+v", people, out.Columns, want)
	}
	again, err := client.Rows[person](out)
	if err != nil || !reflect.DeepEqual(again, people) {
		t.Fatalf("Rows = %+v, %v", again, err)
	}
	if _, err := client.Rows[struct {
		Handle int `json:"p.handle"`
	}](out); err == nil {
		t.Fatal("a row whose column does not fit the field decoded")
	}

	_, err = g.Snapshot(ctx, "no-such-branch")
	var e *client.Error
	if !errors.As(err, &e) || e.Reason != "branch_not_found" || e.Code != api.CodeNotFound {
		t.Fatalf("an unknown branch: %v (%+v); want reason branch_not_found", err, e)
	}
}
