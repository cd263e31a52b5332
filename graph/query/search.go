package query

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/omnigraph-go/omnigraph/index/embed"
	"github.com/omnigraph-go/omnigraph/lang/gq"
	"github.com/omnigraph-go/omnigraph/text"
)

// Search. Every search function is evaluated on the rows the scan binds:
// text filters analyse each candidate's value (text), bm25 takes its
// corpus statistics over every row of the node type in the snapshot (from
// the full-text index when there is one, searchindex.go), nearest is the
// L2 distance and rrf fuses two such rankings. Filters run before ranking,
// so `limit k` is the top k of the matching rows. searchindex.go narrows
// the rows a scan binds through persisted indexes.

// scoreState is what one Score needs, computed once per execution.
type scoreState struct {
	terms  []string     // bm25: the analysed query terms
	corpus *text.Corpus // bm25
	vec    []float32    // nearest: the query vector
	fused  map[string]fusedRank
}

type fusedRank struct {
	score float64
	pos   int
}

// tokens analyses a property value, caching by value.
func (ex *executor) tokens(v any) []string {
	s, ok := v.(string)
	if !ok {
		return nil
	}
	if ex.tok == nil {
		ex.tok = map[string][]string{}
	}
	if t, ok := ex.tok[s]; ok {
		return t
	}
	t := text.Tokens(s)
	ex.tok[s] = t
	return t
}

// textMatch evaluates search, fuzzy and match_text on a row.
func (ex *executor) textMatch(p *gq.Predicate, r []ref) bool {
	v := ex.operand(p.Left, r)
	q, ok := ex.args.Value(p.Right).(string)
	if v == nil || !ok {
		return false
	}
	edits := ex.fuzzyEdits(p)
	toks, terms := ex.tokens(v), ex.queryTerms(q)
	// A row costs a comparison per token and term: counted as work, so a
	// long text search turns heavy (budget.go) as soon as a plain scan of
	// as many comparisons would.
	ex.pending += int64(len(toks) * len(terms))
	return text.MatchAny(toks, terms, edits)
}

// prepareScores computes the state of every score the plan uses.
func (ex *executor) prepareScores(ctx context.Context, rows [][]ref) error {
	var all []*gq.Score
	var walk func(s *gq.Score)
	walk = func(s *gq.Score) {
		if s == nil {
			return
		}
		walk(s.A)
		walk(s.B)
		all = append(all, s)
	}
	for _, c := range ex.rp.Columns {
		walk(c.Score)
	}
	for _, k := range ex.rp.Order {
		walk(k.Score)
	}
	if len(all) == 0 {
		return nil
	}
	ex.scores = map[*gq.Score]*scoreState{}
	for _, s := range all {
		if ex.scores[s] != nil {
			continue
		}
		st := &scoreState{}
		ex.scores[s] = st
		v := ex.rp.Vars[s.Var]
		switch s.Fn {
		case gq.ScoreBM25:
			q, _ := ex.args.Value(s.Query).(string)
			st.terms = text.Terms(q)
			ti, err := ex.textIndex(ctx, v.Node.Name, s.Prop)
			if err != nil {
				return err
			}
			if ti != nil {
				st.corpus = ti.Corpus(st.terms)
				continue
			}
			nr, err := ex.loadNodes(ctx, v.Node.Name, nil)
			if err != nil {
				return err
			}
			st.corpus = text.NewCorpus()
			for i := range nr.ids {
				if i%4096 == 0 {
					if err := ex.work(4096); err != nil {
						return err
					}
				}
				if val := nr.rows.value(i, s.Prop.Name); val != nil {
					st.corpus.Add(ex.tokens(val))
				}
			}
		case gq.ScoreNearest:
			vec, err := ex.queryVector(ctx, v.Node.Name, s)
			if err != nil {
				return err
			}
			st.vec = vec
		case gq.ScoreRRF:
			if err := ex.fuse(s, st, rows); err != nil {
				return err
			}
		}
	}
	return nil
}

// embedQuery embeds nearest()'s query text with the configured embedder
// (index/embed FromEnv), refusing a model other than the one @embed records.
func embedQuery(ctx context.Context, s *gq.Score, q string) ([]float32, error) {
	e, err := embed.FromEnv(os.Getenv)
	if err != nil {
		return nil, err
	}
	if em := s.Prop.Embed; em != nil && em.Model != "" && em.Model != e.Model() {
		return nil, fmt.Errorf("%w: nearest() on %q: its vectors were embedded with model %q, but the query embedder is %q; set OMNIGRAPH_EMBED_MODEL=%q (and the matching provider) or re-embed", embed.ErrEmbed, s.Prop.Name, em.Model, e.Model(), em.Model)
	}
	vs, err := e.Embed(ctx, []string{q}, s.Prop.Type.Dim)
	if err != nil {
		return nil, err
	}
	return vs[0], nil
}

// scoreValue is the value of a score on a row: nearest's distance (nil
// for a NULL vector), bm25's score, rrf's fused score (0 for an entity
// neither ranking holds).
func (ex *executor) scoreValue(s *gq.Score, r []ref) any {
	st := ex.scores[s]
	switch s.Fn {
	case gq.ScoreNearest:
		v, ok := ex.prop(s.Var, s.Prop.Name, r).([]float32)
		if !ok || len(v) != len(st.vec) {
			return nil
		}
		d := 0.0
		for i := range v {
			x := float64(v[i]) - float64(st.vec[i])
			d += x * x
		}
		return math.Sqrt(d)
	case gq.ScoreBM25:
		return st.corpus.Score(ex.tokens(ex.prop(s.Var, s.Prop.Name, r)), st.terms)
	case gq.ScoreRRF:
		id, _ := ex.entityID(s.Var, r).(string)
		return st.fused[id].score
	}
	return nil
}

// sortScore is a score as a sort key: nearest's distance (+Inf for a NULL
// vector, so it sorts last), bm25's score, and for rrf minus the entity's
// place in the fusion (stable over the first ranking then the second, as
// in the original), so that descending order is fusion order.
func (ex *executor) sortScore(s *gq.Score, r []ref) any {
	switch s.Fn {
	case gq.ScoreNearest:
		if v := ex.scoreValue(s, r); v != nil {
			return v
		}
		return math.Inf(1)
	case gq.ScoreRRF:
		id, _ := ex.entityID(s.Var, r).(string)
		if f, ok := ex.scores[s].fused[id]; ok {
			return float64(-f.pos)
		}
		return math.Inf(-1)
	}
	return ex.scoreValue(s, r)
}

// ranking is one arm of rrf: the distinct entities of rows in the arm's
// order (nearest: nearest first; bm25: best first; equal: greater id
// first), at most limit of them, leaving out NULL vectors and bm25 scores
// of 0, as the original's searches do.
func (ex *executor) ranking(s *gq.Score, rows [][]ref, limit int) ([]string, error) {
	type cand struct {
		id string
		v  float64
	}
	seen := map[string]bool{}
	var cs []cand
	for i, r := range rows {
		if i%4096 == 0 {
			if err := ex.work(4096); err != nil {
				return nil, err
			}
		}
		id, _ := ex.entityID(s.Var, r).(string)
		if seen[id] {
			continue
		}
		seen[id] = true
		v, ok := ex.scoreValue(s, r).(float64)
		if !ok || (s.Fn == gq.ScoreBM25 && v <= 0) {
			continue
		}
		if s.Fn == gq.ScoreNearest {
			v = -v
		}
		cs = append(cs, cand{id, v})
	}
	slices.SortFunc(cs, func(a, b cand) int {
		if a.v != b.v {
			if a.v > b.v {
				return -1
			}
			return 1
		}
		return -strings.Compare(a.id, b.id)
	})
	if len(cs) > limit {
		cs = cs[:limit]
	}
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.id
	}
	return out, nil
}

// fuse computes rrf: each arm ranks its limit best entities (the query's
// limit, as in the original); an entity's score is Σ 1/(k + rank) over the
// arms holding it, rank counted from 1; the fusion orders entities by score,
// ties in the order of the first ranking then the second.
func (ex *executor) fuse(s *gq.Score, st *scoreState, rows [][]ref) error {
	k := float64(gq.DefaultRRFK)
	if s.K.Kind != 0 {
		n, ok := gq.IntValue(ex.args.Value(s.K))
		if !ok || n <= 0 {
			return fmt.Errorf("%w: rrf()'s k must be an integer greater than 0, got %v", gq.ErrInvalidQuery, ex.args.Value(s.K))
		}
		k = float64(n)
	}
	limit := len(rows)
	if n, ok := ex.args.Limit(ex.rp); ok {
		limit = int(min(n, int64(len(rows))))
	}
	for _, sub := range []*gq.Score{s.A, s.B} {
		if ex.scores[sub] == nil {
			panic("query: rrf arm not prepared")
		}
	}
	a, err := ex.ranking(s.A, rows, limit)
	if err != nil {
		return err
	}
	b, err := ex.ranking(s.B, rows, limit)
	if err != nil {
		return err
	}
	score := map[string]float64{}
	var order []string
	for _, arm := range [][]string{a, b} {
		for i, id := range arm {
			if _, ok := score[id]; !ok {
				order = append(order, id)
			}
			score[id] += 1 / (k + float64(i) + 1)
		}
	}
	slices.SortStableFunc(order, func(x, y string) int {
		switch {
		case score[x] > score[y]:
			return -1
		case score[x] < score[y]:
			return 1
		}
		return 0
	})
	st.fused = make(map[string]fusedRank, len(order))
	for i, id := range order {
		st.fused[id] = fusedRank{score: score[id], pos: i}
	}
	return nil
}

// ranked keeps the rows a ranking order returns (see gq.ReadPlan.Rank).
// With a limit k it also drops, before the sort, every row ranked below the
// k-th best score: the ranking is the first order key, so such a row can
// never be among the first k (rows tied with the k-th stay, for the later
// keys to order).
func (ex *executor) ranked(rows [][]ref) ([][]ref, error) {
	s := ex.rp.Rank
	if s == nil {
		return rows, nil
	}
	limit := -1
	if n, ok := ex.args.Limit(ex.rp); ok {
		limit = int(min(n, int64(len(rows))))
	}
	out := rows[:0:0]
	var cost []float64 // nearest: distance; bm25: minus the score (smaller is better)
	for i, r := range rows {
		if i%4096 == 0 {
			if err := ex.work(4096); err != nil {
				return nil, err
			}
		}
		switch s.Fn {
		case gq.ScoreNearest:
			v, ok := ex.scoreValue(s, r).(float64)
			if !ok {
				continue
			}
			cost = append(cost, v)
		case gq.ScoreBM25:
			v, _ := ex.scoreValue(s, r).(float64)
			if v <= 0 {
				continue
			}
			cost = append(cost, -v)
		case gq.ScoreRRF:
			id, _ := ex.entityID(s.Var, r).(string)
			f, ok := ex.scores[s].fused[id]
			if !ok || (limit >= 0 && f.pos >= limit) {
				continue
			}
		}
		out = append(out, r)
	}
	if s.Fn == gq.ScoreRRF || limit < 0 || len(out) <= limit {
		return out, nil
	}
	if limit == 0 {
		return out[:0], nil
	}
	sorted := slices.Clone(cost)
	slices.Sort(sorted)
	cut := sorted[limit-1]
	kept := out[:0]
	for i, r := range out {
		if cost[i] <= cut {
			kept = append(kept, r)
		}
	}
	return kept, nil
}
