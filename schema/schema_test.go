package schema_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tallyhq/tally/internal/testenv"
	"github.com/tallyhq/tally/schema"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func openStore(t *testing.T) (*schema.Store, testenv.Database) {
	t.Helper()
	db := testenv.NewStoreDatabase(t)
	return openConfig(t, db.StoreConfig(), false), db
}

// migratedStore is openStore with the schema migrated.
func migratedStore(t *testing.T) *schema.Store {
	t.Helper()
	return openConfig(t, testenv.NewStoreDatabase(t).StoreConfig(), true)
}

// openConfig opens the store cfg describes, migrated when migrate is set,
// and closes it when the test or benchmark ends.
func openConfig(tb testing.TB, cfg schema.Config, migrate bool) *schema.Store {
	tb.Helper()
	s, err := schema.Open(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	if migrate {
		if err := s.Migrate(context.Background()); err != nil {
			tb.Fatal(err)
		}
	}
	return s
}

func TestMigrateTwiceAndConcurrently(t *testing.T) {
	ctx := context.Background()
	s, db := openStore(t)
	// Two processes' worth of stores migrating the same database at once.
	other, err := schema.Open(ctx, db.StoreConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, st := range []*schema.Store{s, other} {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = st.Migrate(ctx) }()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("concurrent migrate %d: %v", i, err)
		}
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("second migrate: %v", err)
	}
	v, err := s.SchemaVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v != schema.LatestVersion() {
		t.Fatalf("schema version %d, want %d", v, schema.LatestVersion())
	}
}

func TestInsertAndReadBack(t *testing.T) {
	ctx := context.Background()
	s := migratedStore(t)
	start := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	row := schema.Span{
		Project: "p", TraceID: strings.Repeat("ab", 16), SpanID: strings.Repeat("cd", 8),
		Start: start, StartNs: uint64(start.UnixNano()), EndNs: uint64(start.UnixNano()) + 1500,
		DurationNs: 1500, Name: "chat gpt-4o", SpanType: schema.TypeInference,
		InputTokens: 1000, CacheReadTokens: 900, OutputTokens: 10, CostTotal: 0.5,
		FinishReasons: []string{"stop"}, AttrKeys: []string{"k"}, AttrValues: []string{"v"},
		EventNames: []string{"e"}, EventTimeNs: []uint64{7}, EventAttrs: []string{"{}"},
		IngestedAt: start, Version: 1,
	}
	dup := row
	dup.Version = 2
	if err := s.InsertSpans(ctx, []schema.Span{row, dup}); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertContents(ctx, []schema.Content{{Project: "p", TraceID: row.TraceID, SpanID: row.SpanID,
		Start: start, Kind: schema.ContentToolArguments, Value: `{"q":1}`, Version: 1}}); err != nil {
		t.Fatal(err)
	}
	var got []schema.Span
	if err := s.Conn().Select(ctx, &got, "SELECT "+schema.SpanColumnNames()+" FROM "+s.Table(schema.TableSpans)+" FINAL"); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("got %d rows after FINAL, want the duplicate collapsed to 1", len(got))
	}
	g := got[0]
	if g.Version != 2 || g.InputTokens != 1000 || g.CacheReadTokens != 900 || g.Name != "chat gpt-4o" ||
		!g.Start.Equal(start) || g.FinishReasons[0] != "stop" || g.EventTimeNs[0] != 7 {
		t.Fatalf("read back %+v", g)
	}
}

// blockRows are ten spans with 0 to 3 attributes and 0 to 2 events each.
func blockRows() []schema.Span {
	start := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	rows := make([]schema.Span, 10)
	for i := range rows {
		keys := make([]string, i%4) // 0 to 3 attributes
		values := make([]string, len(keys))
		for k := range keys {
			keys[k], values[k] = fmt.Sprintf("k%d.%d", i, k), fmt.Sprintf("v%d.%d", i, k)
		}
		rows[i] = schema.Span{Project: "p", TraceID: strings.Repeat("ab", 16), SpanID: fmt.Sprintf("%016x", i),
			Start: start, StartNs: uint64(start.UnixNano()) + uint64(i), Name: fmt.Sprintf("span %d", i),
			AttrKeys: keys, AttrValues: values, EventTimeNs: slices.Repeat([]uint64{uint64(i)}, i%3), Version: 1}
	}
	return rows
}

// checkStoredOnce reads the spans table back and checks it holds exactly
// rows, whole, in one active part (one INSERT).
func checkStoredOnce(t *testing.T, s *schema.Store, db testenv.Database, rows []schema.Span) {
	t.Helper()
	ctx := context.Background()
	var got []schema.Span
	if err := s.Conn().Select(ctx, &got, "SELECT "+schema.SpanColumnNames()+" FROM "+s.Table(schema.TableSpans)+" ORDER BY span_id"); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(rows) {
		t.Fatalf("read back %d rows, want %d", len(got), len(rows))
	}
	for i, g := range got {
		w := rows[i]
		if g.SpanID != w.SpanID || g.Name != w.Name || g.StartNs != w.StartNs ||
			!slices.Equal(g.AttrKeys, w.AttrKeys) || !slices.Equal(g.AttrValues, w.AttrValues) || !slices.Equal(g.EventTimeNs, w.EventTimeNs) {
			t.Errorf("row %d: read back %s %q start %d attrs %q=%q events %v, want %s %q start %d attrs %q=%q events %v", i,
				g.SpanID, g.Name, g.StartNs, g.AttrKeys, g.AttrValues, g.EventTimeNs,
				w.SpanID, w.Name, w.StartNs, w.AttrKeys, w.AttrValues, w.EventTimeNs)
		}
	}
	var parts uint64
	if err := s.Conn().QueryRow(ctx, "SELECT count() FROM system.parts WHERE database = ? AND table = ? AND active",
		db.Name, schema.TableSpans).Scan(&parts); err != nil {
		t.Fatal(err)
	}
	if parts != 1 {
		t.Fatalf("%d active parts after one INSERT, want 1", parts)
	}
}

// TestInsertInBlocks writes one INSERT of ten spans in blocks of two
// (Config.BlockBytes of two of the largest rows) and reads every row back
// whole, arrays of different lengths included: the columns reset between
// blocks must leave no row short or shifted. The INSERT is one statement,
// so the server keeps it as one part.
func TestInsertInBlocks(t *testing.T) {
	ctx := context.Background()
	db := testenv.NewStoreDatabase(t)
	rows := blockRows()
	cfg := db.StoreConfig()
	// Any two rows fit in 2×largest bytes and, with three of the smallest
	// over that, no three do: five blocks of two.
	var most, least int64 = 0, 1 << 62
	for i := range rows {
		most, least = max(most, rows[i].DataBytes()), min(least, rows[i].DataBytes())
	}
	if 3*least <= 2*most {
		t.Fatalf("rows of %d to %d bytes: the blocks would not be of two", least, most)
	}
	cfg.BlockBytes = 2 * most
	s := openConfig(t, cfg, true)
	if err := s.InsertSpans(ctx, rows); err != nil {
		t.Fatal(err)
	}
	checkStoredOnce(t, s, db, rows)
}

// blockPerRowStore is a migrated store whose INSERTs send a block per row:
// Append sends all but the last row at once.
func blockPerRowStore(t *testing.T) (*schema.Store, testenv.Database) {
	db := testenv.NewStoreDatabase(t)
	cfg := db.StoreConfig()
	cfg.BlockBytes = 1
	return openConfig(t, cfg, true), db
}

// TestInsertHeldOpen appends three batches to one INSERT, reusing the
// caller's slice between them as the durable log's drain does: the columns
// must have copied each batch, and the server must make one part of all.
func TestInsertHeldOpen(t *testing.T) {
	ctx := context.Background()
	s, db := blockPerRowStore(t)
	rows := blockRows()
	in, err := s.BeginSpans(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Abort()
	buf := make([]schema.Span, 0, 4)
	for _, batch := range [][]schema.Span{rows[:4], rows[4:8], rows[8:]} {
		buf = append(buf[:0], batch...)
		if err := in.Append(buf); err != nil {
			t.Fatal(err)
		}
		clear(buf) // what the drain does before it reads the next batch
	}
	if in.Rows() != len(rows) {
		t.Fatalf("Rows() = %d after appending %d", in.Rows(), len(rows))
	}
	if err := in.Commit(); err != nil {
		t.Fatal(err)
	}
	checkStoredOnce(t, s, db, rows)
}

// TestAbortedInsertStoresAtMostWhatWasSent: Abort drops the connection
// mid-statement. ClickHouse 18.16 may then store the blocks it already
// took (measured: it writes them as a part), never the block still in the
// client; the embedded store's HTTP client sent nothing. Callers therefore
// treat an aborted INSERT as possibly written, as the durable log's drain
// does (it rewrites the rows; reads collapse them by span identity).
func TestAbortedInsertStoresAtMostWhatWasSent(t *testing.T) {
	ctx := context.Background()
	s, db := blockPerRowStore(t)
	rows := blockRows()[:4]
	in, err := s.BeginSpans(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Append(rows); err != nil {
		t.Fatal(err)
	}
	in.Abort()
	// The server may take a moment to finish a statement whose client
	// left: wait until the count stops changing, then check it.
	var n, last uint64 = 0, 1 << 62
	for range 50 {
		if err := s.Conn().QueryRow(ctx, "SELECT count() FROM "+s.Table(schema.TableSpans)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == last {
			break
		}
		last = n
		time.Sleep(100 * time.Millisecond)
	}
	sent := uint64(len(rows) - 1) // the last block is still in the client
	if db.Engine != nil {
		sent = 0
	}
	if n > sent {
		t.Fatalf("%d rows stored after an aborted INSERT, want at most the %d blocks sent", n, sent)
	}
	t.Logf("aborted INSERT of %d rows in blocks of one: %d stored", len(rows), n)
}

func TestCapabilitiesFor(t *testing.T) {
	for _, c := range []struct {
		version         string
		lowCard, codecs bool
	}{
		{"18.16.1", false, false},
		{"19.9.2.4", true, false},
		{"24.8.4.13", true, true},
		{"garbage", false, false},
	} {
		got := schema.CapabilitiesFor(c.version)
		if got.LowCardinality != c.lowCard || got.Codecs != c.codecs {
			t.Errorf("%s: got %+v", c.version, got)
		}
	}
}

func TestDetectedCapabilitiesOnTestServer(t *testing.T) {
	s, db := openStore(t)
	caps := s.Capabilities()
	if db.Engine != nil {
		// The embedded engine is ClickHouse 26.7: the modern branch, with
		// every capability tally uses.
		if caps.Major != 26 || !caps.LowCardinality || !caps.Codecs || !caps.TTL {
			t.Fatalf("capabilities of the embedded engine: %+v", caps)
		}
		if !s.Embedded() {
			t.Fatal("a store on the embedded engine does not say so")
		}
		return
	}
	// The test server is Debian's 18.16: the portable branch.
	if caps.Major != 18 || caps.LowCardinality {
		t.Fatalf("capabilities of the test server: %+v", caps)
	}
}

// TestOpenRefusesNegativeBounds: a negative block bound or write timeout
// is a mistake, refused before anything connects; 0 means the default.
func TestOpenRefusesNegativeBounds(t *testing.T) {
	for _, c := range []struct {
		cfg  schema.Config
		want string
	}{
		{schema.Config{BlockBytes: -1}, "insert block bytes -1: must be positive"},
		{schema.Config{WriteTimeout: -time.Nanosecond}, "write timeout -1ns: must be positive"},
	} {
		c.cfg.Addr, c.cfg.Database = "127.0.0.1:1", "tally"
		_, err := schema.Open(context.Background(), c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open with %+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}
