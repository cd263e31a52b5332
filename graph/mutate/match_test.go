package mutate

import (
	"testing"

	"github.com/omnigraph-go/omnigraph/lang/gq"
)

func TestMutationMatch(t *testing.T) {
	tests := []struct {
		name        string
		op          gq.CmpOp
		left, right any
		want        bool
	}{
		{"string eq", gq.OpEq, "a", "a", true},
		{"string lt", gq.OpLt, "a", "b", true},
		{"null never matches", gq.OpNe, nil, "a", false},
		{"null right", gq.OpEq, "a", nil, false},
		{"int32 vs int64", gq.OpEq, int32(5), int64(5), true},
		{"int vs float", gq.OpLt, int64(2), float64(2.5), true},
		{"uint vs negative int", gq.OpGt, uint64(1), int64(-1), true},
		{"big uint64 exact", gq.OpGt, uint64(1<<63 + 1), uint64(1 << 63), true},
		{"bool eq", gq.OpEq, true, true, true},
		{"bool has no order", gq.OpLt, false, true, false},
		{"string vs number", gq.OpEq, "1", int64(1), false},
		{"substring", gq.OpContains, "hello world", "lo w", true},
		{"list membership", gq.OpContains, []any{"go", "sql"}, "sql", true},
		{"list miss", gq.OpContains, []any{"go"}, "g", false},
		{"prefix", gq.OpStartsWith, "alice", "al", true},
		{"prefix miss", gq.OpStartsWith, "alice", "li", false},
		{"date as days", gq.OpGe, int32(19000), int32(18999), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := mutationMatch(tc.op, tc.left, tc.right); got != tc.want {
				t.Errorf("%v %s %v = %v, want %v", tc.left, tc.op, tc.right, got, tc.want)
			}
		})
	}
}
