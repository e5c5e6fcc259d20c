package rollup_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tallyhq/tally/internal/goldentest"
	"github.com/tallyhq/tally/pricing"
	"github.com/tallyhq/tally/schema"
)

// The golden-corpus harness is shared with package query's tests
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

// turns is a rollup.Gate that records the turns taken and given back.
type turns struct {
	mu              sync.Mutex
	entered, closed []string
}

func (g *turns) Enter(_ context.Context, job string) (func(), error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.entered = append(g.entered, job)
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.closed = append(g.closed, job)
	}, nil
}
