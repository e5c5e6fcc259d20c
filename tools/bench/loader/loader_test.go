package loader_test

import (
	"context"
	"testing"
	"time"

	"github.com/tallyhq/tally/internal/testenv"
	"github.com/tallyhq/tally/schema"
	"github.com/tallyhq/tally/tools/bench/loader"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func openStore(t *testing.T) *schema.Store {
	t.Helper()
	ch := testenv.ClickHouse(t)
	db := ch.NewDatabase(t)
	ctx := context.Background()
	store, err := schema.Open(ctx, schema.Config{Addr: ch.Addr, Database: db})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { store.Close() })
	if err := store.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return store
}

func queryUint(t *testing.T, store *schema.Store, q string, args ...any) uint64 {
	t.Helper()
	var n uint64
	if err := store.Conn().QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

func TestLoad(t *testing.T) {
	store := openStore(t)
	end := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	cfg := loader.Config{
		Spans:     3000,
		Days:      2,
		RunSize:   20,
		LargeRuns: []int{500},
		Seed:      7,
		Project:   "bench",
		End:       end,
		Content:   true,
		BatchRows: 700, // several batches, so both inserters work
	}
	st, err := loader.Load(context.Background(), store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	spans := store.Table(schema.TableSpans)

	// Exactly Spans rows, all in the project, none duplicated.
	if st.Spans != 3000 {
		t.Errorf("Stats.Spans = %d, want 3000", st.Spans)
	}
	if n := queryUint(t, store, "SELECT count() FROM "+spans+" WHERE project = 'bench'"); n != 3000 {
		t.Errorf("rows = %d, want 3000", n)
	}
	if n := queryUint(t, store, "SELECT uniqExact(trace_id, span_id) FROM "+spans); n != 3000 {
		t.Errorf("distinct span identities = %d, want 3000", n)
	}
	if n := queryUint(t, store, "SELECT uniqExact(trace_id) FROM "+spans); n != uint64(st.Runs) {
		t.Errorf("distinct traces = %d, want Stats.Runs = %d", n, st.Runs)
	}
	// 2500 spans in normal runs of 10 to 30 spans (mean 20): between
	// 2500/30 ≈ 84 and 2500/10 = 250 of them, plus the large run.
	if st.Runs < 85 || st.Runs > 251 {
		t.Errorf("Stats.Runs = %d, want 85..251", st.Runs)
	}
	// 3000 rows in batches of at least 700 rows: at most 5 batches.
	if st.Batches < 2 || st.Batches > 5 {
		t.Errorf("Stats.Batches = %d, want 2..5", st.Batches)
	}

	// The large run is whole: 500 spans, one root, every parent present.
	if len(st.Large) != 1 || st.Large[0].Spans != 500 {
		t.Fatalf("Stats.Large = %+v, want one run of 500 spans", st.Large)
	}
	id := st.Large[0].TraceID
	if n := queryUint(t, store, "SELECT count() FROM "+spans+" WHERE trace_id = ?", id); n != 500 {
		t.Errorf("large run rows = %d, want 500", n)
	}
	if n := queryUint(t, store, "SELECT countIf(parent_span_id = '') FROM "+spans+" WHERE trace_id = ?", id); n != 1 {
		t.Errorf("large run roots = %d, want 1", n)
	}
	orphans := queryUint(t, store, "SELECT count() FROM "+spans+" AS c WHERE c.parent_span_id != '' AND "+
		"(c.trace_id, c.parent_span_id) NOT IN (SELECT trace_id, span_id FROM "+spans+")")
	if orphans != 0 {
		t.Errorf("spans whose parent is missing = %d, want 0 (truncated runs keep their parents)", orphans)
	}

	// Start times lie in the two days before End.
	lo := queryUint(t, store, "SELECT min(start_ns) FROM "+spans)
	if since := uint64(end.Add(-48 * time.Hour).UnixNano()); lo < since {
		t.Errorf("earliest start %d before the window start %d", lo, since)
	}
	if n := queryUint(t, store, "SELECT countIf(toUnixTimestamp(start) != intDiv(start_ns, 1000000000)) FROM "+spans); n != 0 {
		t.Errorf("%d rows whose start does not match start_ns", n)
	}
	// Chat spans are priced by the catalog, tool spans have content.
	if n := queryUint(t, store, "SELECT countIf(span_type = 'inference' AND cost_total > 0) FROM "+spans); n == 0 {
		t.Error("no priced inference spans")
	}
	if n := queryUint(t, store, "SELECT count() FROM "+store.Table(schema.TableContent)); n != uint64(st.Contents) || n == 0 {
		t.Errorf("content rows = %d, want Stats.Contents = %d (> 0)", n, st.Contents)
	}

	// The same Config writes the same rows: loading again only duplicates
	// identities, which FINAL collapses.
	if _, err := loader.Load(context.Background(), store, cfg); err != nil {
		t.Fatal(err)
	}
	if n := queryUint(t, store, "SELECT count() FROM "+spans+" FINAL"); n != 3000 {
		t.Errorf("rows after loading twice, FINAL = %d, want 3000", n)
	}
}

func TestLoadRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  loader.Config
	}{
		{"no spans", loader.Config{}},
		{"large runs beyond spans", loader.Config{Spans: 100, LargeRuns: []int{500}}},
		{"non-positive large run", loader.Config{Spans: 100, LargeRuns: []int{0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := loader.Load(context.Background(), nil, tt.cfg); err == nil {
				t.Error("Load succeeded, want an error")
			}
		})
	}
}
