package query_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tallyhq/tally/internal/goldentest"
	"github.com/tallyhq/tally/pricing"
	"github.com/tallyhq/tally/schema"
)

// The golden-corpus harness is shared with package rollup's tests
// (internal/goldentest); these are its short names here.
func openStore(t testing.TB) *schema.Store      { return goldentest.OpenStore(t) }
func builtin(t testing.TB) *pricing.Catalog     { return goldentest.Builtin(t) }
func near(a, b float64) bool                    { return goldentest.Near(a, b) }
func mustTime(t testing.TB, s string) time.Time { return goldentest.MustTime(t, s) }
func insert(t testing.TB, store *schema.Store, spans []schema.Span, version uint64) {
	goldentest.Insert(t, store, spans, version)
}
func loadCorpus(t testing.TB, path, project string, catalog *pricing.Catalog) []schema.Span {
	return goldentest.LoadCorpus(t, path, project, catalog)
}

// lateSpan is the corpus span id sent again as a run of its own, of
// agent (named "invoke_agent " + agent, a root: no parent) starting at
// at and lasting a second: a run with that span's usage and cost.
func lateSpan(t testing.TB, spans []schema.Span, id, agent string, at time.Time) schema.Span {
	t.Helper()
	i := slices.IndexFunc(spans, func(s schema.Span) bool { return s.SpanID == id })
	if i < 0 {
		t.Fatalf("no span %s in the corpus", id)
	}
	s := spans[i]
	s.TraceID, s.SpanID, s.ParentSpanID = strings.Repeat(id[len(id)-1:], 32), "00000000000009"+id[len(id)-2:], ""
	s.AgentName, s.Name = agent, "invoke_agent "+agent
	s.Start, s.StartNs, s.EndNs = at, uint64(at.UnixNano()), uint64(at.Add(time.Second).UnixNano())
	return s
}
