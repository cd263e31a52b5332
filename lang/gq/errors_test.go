package gq

import (
	"errors"
	"strings"
	"testing"

	"github.com/omnigraph-go/omnigraph/lang/pg"
)

// testSchema adds what social.pg lacks: blobs, vectors, unsigned and
// composite keys, and an edge with a required property.
const testSchema = `
node Doc {
  path: String @key
  body: Blob?
  vec: Vector(3)?
  size: U64
  tags: [String]?
  kind: enum(a, b)?
}
node Cell {
  row: I64
  col: I64
  v: F64?
  @key(row, col)
}
node Loose {
  note: String?
}
edge Links: Doc -> Doc
edge Holds: Doc -> Cell {
  weight: I32
  data: Blob?
}
`

func testCatalog(t testing.TB) *pg.Catalog {
	t.Helper()
	cat, err := pg.Compile(testSchema)
	if err != nil {
		t.Fatalf("compile test schema: %v", err)
	}
	return cat
}

// TestCheckErrors covers every diagnostic: code, line:column and the advice
// in the message.
func TestCheckErrors(t *testing.T) {
	social := socialCatalog(t)
	docs := testCatalog(t)
	tests := []struct {
		name   string
		cat    *pg.Catalog
		src    string
		code   Code
		pos    string
		advice string
	}{
		// Syntax (GQ001).
		{"unterminated string", social, "query q() {\n match { $p: Person { name: \"Ada } }", CodeSyntax, "2:29", "close it with"},
		{"missing return", social, "query q() { match { $p: Person } }", CodeSyntax, "1:34", "return { ... }"},
		{"bad filter op", social, "query q() { match { $p: Person $p.age ~ 3 } return { $p } }", CodeSyntax, "1:39", "unexpected character"},
		{"filter without op", social, "query q() { match { $p: Person\n $p.age } return { $p } }", CodeSyntax, "2:9", "filters use ="},
		{"empty return", social, "query q() { match { $p: Person } return { } }", CodeSyntax, "1:43", "list at least one value"},
		{"empty match", social, "query q() { match { } return { $p } }", CodeSyntax, "1:21", "at least one clause"},
		{"empty file", social, "// nothing", CodeSyntax, "1:11", "write a query"},
		{"no body kind", social, "query q() { select }", CodeSyntax, "1:13", "starts with `match`"},
		{"bang", social, "query q() { match { $p: Person $p.age ! 3 } return { $p } }", CodeSyntax, "1:39", "write != "},
		{"unclosed comment", social, "/* x", CodeSyntax, "1:1", "close it with */"},
		{"read under mutation keyword", social, "mutation q() { match { $p: Person } return { $p } }", CodeSyntax, "1:1", "declare a read with `query"},
		{"negative limit", social, "query q() { match { $p: Person } return { $p } limit -1 }", CodeLimit, "1:54", "non-negative"},
		{"limit word", social, "query q() { match { $p: Person } return { $p } limit all }", CodeLimit, "1:54", "limit 10"},
		{"bad escape", social, "query q() { match { $p: Person { name: \"a\\qb\" } } return { $p } }", CodeSyntax, "1:42", "use \\n"},
		{"lone dollar", social, "query q() { match { $ } }", CodeSyntax, "1:21", "followed by a name"},
		{"number into name", social, "query q() { match { $p: Person $p.age > 3abc } return { $p } }", CodeSyntax, "1:41", "put a space"},
		{"zero vector", social, "query q($v: Vector(0)) { match { $p: Person } return { $p } }", CodeSyntax, "1:20", "Vector(8)"},
		{"nested list param", social, "query q($v: [[String]]) { match { $p: Person } return { $p } }", CodeParam, "1:14", "non-null base scalar"},
		{"unclosed undirected", social, "query q() { match { $p: Person $p <knows $q } return { $p } }", CodeSyntax, "1:42", "close an undirected edge with '>'"},
		{"hop without comma", social, "query q() { match { $p: Person $p knows{2} $q } return { $p } }", CodeSyntax, "1:42", "{min,max}"},
		// D₂ (GQ002).
		{"mixed insert then delete", social, "query q() {\n insert Person { handle: \"a\", name: \"A\" }\n delete Person where handle = \"b\"\n}", CodeMixedMutation, "3:2", "Split it into two queries"},
		{"mixed delete then update", social, "query q() {\n delete Knows where from = \"a\"\n update Person set { age: 3 } where handle = \"b\"\n}", CodeMixedMutation, "3:2", "inserts/updates first, then the deletes"},
		// Query names (GQ004) and params (GQ005).
		{"duplicate query", social, "query q() { match { $p: Person } return { $p } }\nquery q() { match { $p: Person } return { $p } }", CodeDuplicateQuery, "2:1", "its own name"},
		{"duplicate param", social, "query q($a: String, $a: I32) { match { $p: Person } return { $p } }", CodeParam, "1:21", "declared twice"},
		{"reserved param", social, "query q($__nanograph_now: String) { match { $p: Person } return { $p } }", CodeParam, "1:9", "reserved"},
		{"enum param", social, "query q($a: enum) { match { $p: Person } return { $p } }", CodeParam, "1:13", "declare it String"},
		{"unknown param type", social, "query q($a: Text) { match { $p: Person } return { $p } }", CodeParam, "1:13", "use String"},
		// Names (GQ010, GQ011, GQ014).
		{"unknown node", social, "query q() { match { $p: Persn } return { $p } }", CodeUnknownType, "1:25", "did you mean Person?"},
		{"edge as node", social, "query q() { match { $p: Knows } return { $p } }", CodeUnknownType, "1:25", "traverse it instead"},
		{"unknown property inline", social, "query q() { match { $p: Person { nme: \"x\" } } return { $p } }", CodeUnknownProperty, "1:34", "did you mean name?"},
		{"unknown property filter", social, "query q() { match { $p: Person $p.agee > 3 } return { $p } }", CodeUnknownProperty, "1:32", "did you mean age?"},
		{"id not queryable", social, "query q() { match { $p: Person } return { $p.id } }", CodeUnknownProperty, "1:43", "physical id columns are not queryable"},
		{"unknown edge", social, "query q() { match { $p: Person $p knowz $q } return { $q } }", CodeUnknownEdge, "1:35", "did you mean Knows?"},
		{"node as edge", social, "query q() { match { $p: Person $p company $q } return { $q } }", CodeUnknownEdge, "1:35", "is a node type"},
		{"unknown insert type", social, "query q() { insert Persons { handle: \"a\" } }", CodeUnknownType, "1:20", "did you mean Person?"},
		// Variables (GQ012, GQ022).
		{"unbound in return", social, "query q() { match { $p: Person } return { $q.name } }", CodeUnbound, "1:43", "bind it first"},
		{"unbound in filter", social, "query q() { match { $p: Person $p.age > $x } return { $p } }", CodeUnbound, "1:41", "declare it in the parameter list"},
		{"undeclared param inline", social, "query q() { match { $p: Person { name: $n } } return { $p } }", CodeUnbound, "1:40", "($n: String)"},
		{"bare name", social, "query q() { match { $p: Person age > 3 } return { $p } }", CodeUnbound, "1:32", "as in $p.age"},
		{"unresolvable type", social, "query q() { match { $p: Person $q.age > 3 } return { $p } }", CodeUnbound, "1:32", "bind it first"},
		{"param as variable", social, "query q($p: String) { match { $p: Person } return { $p } }", CodeRebind, "1:31", "needs another name"},
		{"two types", social, "query q() { match { $p: Person $p: Company } return { $p } }", CodeRebind, "1:36", "use a new name"},
		{"anonymous binding", social, "query q() { match { $_: Person } return { 1 } }", CodeRebind, "1:21", "name the variable"},
		// Blob (GQ013).
		{"blob inline", docs, "query q() { match { $d: Doc { body: \"x\" } } return { $d } }", CodeBlob, "1:31", "match on another property"},
		{"blob return", docs, "query q() { match { $d: Doc } return { $d.body } }", CodeBlob, "1:40", "blob API"},
		{"blob edge filter", docs, "query q() { match { $d: Doc $d $h:holds $c $h.data = \"x\" } return { $c.v } }", CodeBlob, "1:44", "blob API"},
		{"blob delete where", docs, "query q() { delete Doc where body = \"x\" }", CodeBlob, "1:30", "another property"},
		// Endpoints (GQ015).
		{"wrong endpoint", social, "query q() { match { $c: Company $p: Person $c knows $p } return { $p } }", CodeEndpoint, "1:47", "bind the endpoints to Person and Person"},
		{"both sides wrong", social, "query q() { match { $p: Person $t: Topic $p worksAt $t } return { $p } }", CodeEndpoint, "1:45", "Person and Company"},
		// Type mismatches (GQ016).
		{"string vs int", social, "query q() { match { $p: Person $p.age > \"old\" } return { $p } }", CodeTypeMismatch, "1:41", "as in 42"},
		{"int vs string inline", social, "query q() { match { $p: Person { name: 3 } } return { $p } }", CodeTypeMismatch, "1:40", "write a String value"},
		{"param type", social, "query q($a: String) { match { $p: Person $p.age > $a } return { $p } }", CodeTypeMismatch, "1:49", "declare $a: I32"},
		{"order on bool", social, "query q() { match { $p: Person $p.name < true } return { $p } }", CodeTypeMismatch, "1:42", "write a String value"},
		{"contains on int", social, "query q() { match { $p: Person $p.age contains 3 } return { $p } }", CodeTypeMismatch, "1:39", "use = instead"},
		{"starts_with on list", social, "query q() { match { $p: Person $p.interests starts_with \"a\" } return { $p } }", CodeTypeMismatch, "1:45", "use = or < instead"},
		{"list equality", social, "query q() { match { $p: Person $p.interests = \"a\" } return { $p } }", CodeTypeMismatch, "1:45", "test membership with contains"},
		{"contains element type", social, "query q() { match { $p: Person $p.interests contains 3 } return { $p } }", CodeTypeMismatch, "1:54", "write a String value"},
		{"vector order", docs, "query q() { match { $d: Doc $d.vec < [1,2,3] } return { $d.path } }", CodeTypeMismatch, "1:36", "has no order"},
		{"two literals", social, "query q() { match { $p: Person 1 = 1 } return { $p } }", CodeTypeMismatch, "1:32", "compare a property with a value"},
		{"var vs prop", social, "query q() { match { $p: Person $q: Person $p = $q.name } return { $p } }", CodeTypeMismatch, "1:46", "compare a property instead"},
		{"vars of two types", social, "query q() { match { $p: Person $c: Company $p != $c } return { $p } }", CodeTypeMismatch, "1:47", "variables of one type"},
		{"now vs date", social, "query q() { match { $p: Person $p.joined < now() } return { $p } }", CodeTypeMismatch, "1:42", "as in date(\"2024-01-31\")"},
		{"assign wrong param", social, "query q($a: I64) { insert Person { handle: \"x\", name: \"y\", age: $a } }", CodeTypeMismatch, "1:65", "declare $a: I32"},
		{"starts_with literal left", social, "query q() { match { $p: Person \"A\" starts_with $p.name } return { $p } }", CodeTypeMismatch, "1:32", "property on the left"},
		// Aggregates (GQ017, GQ018).
		{"sum of string", social, "query q() { match { $p: Person } return { sum($p.name) } }", CodeAggregateArg, "1:47", "needs a numeric property"},
		{"avg of var", social, "query q() { match { $p: Person } return { avg($p) } }", CodeAggregateArg, "1:47", "use count($p)"},
		{"min of list", social, "query q() { match { $p: Person } return { min($p.interests) } }", CodeAggregateArg, "1:47", "use count($p.interests)"},
		{"count of literal", social, "query q() { match { $p: Person } return { count(1) } }", CodeAggregateArg, "1:49", "count($p)"},
		{"literal with aggregate", social, "query q() { match { $p: Person } return { 1, count($p) } }", CodeAggregateMix, "1:43", "must be properties or variables"},
		{"nested aggregate", social, "query q() { match { $p: Person } return { max(count($p)) } }", CodeAggregateMix, "1:47", "cannot be nested"},
		{"aggregate in filter", social, "query q() { match { $p: Person count($p) > 3 } return { $p } }", CodeAggregateMix, "1:32", "only allowed in return and order"},
		{"order by non-column when grouped", social, "query q() { match { $p: Person } return { $p.city, count($p) } order { $p.age } }", CodeAggregateMix, "1:72", "order by a returned column"},
		// Hops (GQ019), undirected (GQ020), edge binding (GQ021).
		{"unbounded", social, "query q() { match { $p: Person $p knows{1,} $q } return { $q } }", CodeHops, "1:40", "knows{1,3}"},
		{"zero min", social, "query q() { match { $p: Person $p knows{0,2} $q } return { $q } }", CodeHops, "1:40", "knows{1,2}"},
		{"max below min", social, "query q() { match { $p: Person $p knows{3,2} $q } return { $q } }", CodeHops, "1:40", "knows{2,3}"},
		{"too many hops", social, "query q() { match { $p: Person $p knows{1,99} $q } return { $q } }", CodeHops, "1:40", "knows{1,32}"},
		{"duplicate description", social, "query q() @description(\"a\") @description(\"b\") { match { $p: Person } return { $p } }", CodeSyntax, "1:29", "declares @description twice"},
		{"duplicate instruction", social, "query q() @instruction(\"a\") @instruction(\"b\") { match { $p: Person } return { $p } }", CodeSyntax, "1:29", "declares @instruction twice"},
		{"blob param returned", social, "query q($b: Blob) { match { $p: Person } return { $p.name, $b } }", CodeBlob, "1:60", "$b is a Blob and cannot be returned"},
		{"literal contains a number", social, "query q() { match { $p: Person \"30\" contains $p.age } return { $p } }", CodeTypeMismatch, "1:32", "contains needs the property on the left"},
		{"undirected asymmetric", social, "query q() { match { $p: Person $p <worksAt> $c } return { $c } }", CodeUndirected, "1:36", "write $a worksAt $b"},
		{"edge var with hops", social, "query q() { match { $p: Person $p $k:knows{1,2} $q } return { $q } }", CodeEdgeBinding, "1:43", "drop {1,2}"},
		{"edge var as endpoint", social, "query q() { match { $p: Person $p $k:knows $q $k knows $p } return { $q } }", CodeEdgeBinding, "1:47", "cannot be a node"},
		{"edge var returned whole", social, "query q() { match { $p: Person $p $k:knows $q } return { $k } }", CodeEdgeBinding, "1:58", "as in $k.since"},
		{"edge var twice", social, "query q() { match { $p: Person $p $k:knows $q $q $k:knows $p } return { $q } }", CodeEdgeBinding, "1:47", "bound twice"},
		{"anonymous edge var", social, "query q() { match { $p: Person $p $_:knows $q } return { $q } }", CodeEdgeBinding, "1:32", "needs a name"},
		// Negation (GQ023).
		{"detached not", social, "query q() { match { $p: Person not { $c: Company } } return { $p } }", CodeNegation, "1:32", "must use a variable bound outside"},
		// Inserts (GQ024, GQ025), updates (GQ026, GQ027).
		{"insert missing required", social, "query q() {\n insert Person { handle: \"x\" }\n}", CodeMissingRequired, "2:2", "add name: \"text\""},
		{"insert edge missing to", social, "query q() { insert Knows { from: \"a\" } }", CodeMissingRequired, "1:13", "add to: \"text\""},
		{"insert edge missing prop", docs, "query q() { insert Holds { from: \"a\", to: \"[1,2]\" } }", CodeMissingRequired, "1:13", "weight: 42"},
		{"insert duplicate", social, "query q() { insert Person { handle: \"x\", name: \"a\", name: \"b\" } }", CodeDuplicateAssign, "1:53", "keep one value"},
		{"inline duplicate", social, "query q() { match { $p: Person { name: \"a\", name: \"b\" } } return { $p } }", CodeDuplicateAssign, "1:45", "keep one value"},
		{"update key", social, "query q() { update Person set { handle: \"x\" } where name = \"a\" }", CodeKeyAssign, "1:33", "delete the node and insert it"},
		{"update edge", social, "query q() { update Knows set { since: date(\"2024-01-01\") } where from = \"a\" }", CodeUpdateEdge, "1:13", "delete the edge and insert it again"},
		{"update nothing", social, "query q() { update Person set { } where name = \"a\" }", CodeUnknownType, "1:13", "assign at least one property"},
		{"update unknown where", social, "query q() { update Person set { age: 3 } where nme = \"a\" }", CodeUnknownProperty, "1:48", "did you mean name?"},
		{"edge from ordering", social, "query q() { delete Knows where from < \"a\" }", CodeTypeMismatch, "1:37", "only = and != apply"},
		{"from on node delete", social, "query q() { delete Person where from = \"a\" }", CodeUnknownProperty, "1:33", "has no property \"from\""},
		// Columns (GQ028), limit (GQ029), null (GQ030), values (GQ031).
		{"duplicate column", social, "query q() { match { $p: Person $p knows $q } return { $p.name, $p.name } }", CodeColumn, "1:64", "$p.name as p_name_2"},
		{"unknown order alias", social, "query q() { match { $p: Person } return { $p.name as n } order { nn } }", CodeColumn, "1:66", "did you mean n?"},
		{"limit param type", social, "query q($n: String) { match { $p: Person } return { $p } limit $n }", CodeLimit, "1:64", "declare $n: I64"},
		{"limit param undeclared", social, "query q() { match { $p: Person } return { $p } limit $n }", CodeUnbound, "1:54", "write limit 10"},
		{"limit too big", social, "query q() { match { $p: Person } return { $p } limit 99999999999999999999 }", CodeLimit, "1:54", "non-negative integer"},
		{"null in match", social, "query q() { match { $p: Person { city: null } } return { $p } }", CodeNull, "1:40", "NULL never matches"},
		{"null filter", social, "query q() { match { $p: Person $p.city != null } return { $p } }", CodeNull, "1:43", "compare with a value"},
		{"null into required", social, "query q() { insert Person { handle: \"x\", name: null } }", CodeNull, "1:48", "cannot be null"},
		{"nullable param into required", social, "query q($n: String?) { insert Person { handle: \"x\", name: $n } }", CodeNull, "1:59", "without '?'"},
		{"enum member", social, "query q() { match { $c: Company { industry: \"mining\" } } return { $c } }", CodeBadValue, "1:45", "not one of finance, health"},
		{"int overflow", social, "query q() { match { $p: Person $p.age > 3000000000 } return { $p } }", CodeBadValue, "1:41", "does not fit I32"},
		{"negative unsigned", docs, "query q() { match { $d: Doc $d.size > -1 } return { $d.path } }", CodeBadValue, "1:39", "does not fit U64"},
		{"bad date", social, "query q() { match { $p: Person $p.joined > date(\"2024-13-01\") } return { $p } }", CodeBadValue, "1:44", "write YYYY-MM-DD"},
		{"range on insert", social, "query q() { insert Person { handle: \"x\", name: \"y\", age: 200 } }", CodeBadValue, "1:58", "@range"},
		{"check on insert", social, "query q() { insert Person { handle: \"x\", name: \"y\", email: \"nope\" } }", CodeBadValue, "1:60", "@check"},
		{"vector length", docs, "query q() { insert Doc { path: \"a\", size: 1, vec: [1, 2] } }", CodeBadValue, "1:51", "give exactly 3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.code == "" {
				t.Skip("placeholder")
			}
			_, err := Compile(tc.src, tc.cat)
			if err == nil {
				t.Fatalf("want %s, got no error", tc.code)
			}
			if !errors.Is(err, ErrInvalidQuery) {
				t.Errorf("errors.Is(err, ErrInvalidQuery) is false for %v", err)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("want *Error, got %T %v", err, err)
			}
			if e.Code != tc.code || e.Pos.String() != tc.pos || !strings.Contains(e.Msg, tc.advice) {
				t.Errorf("got %v\nwant %s at %s with %q", err, tc.code, tc.pos, tc.advice)
			}
		})
	}
}
