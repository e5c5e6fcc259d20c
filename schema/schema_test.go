package schema_test

import (
	"context"
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
	s, err := schema.Open(context.Background(), db.StoreConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, db
}

// migratedStore is openStore with the schema migrated.
func migratedStore(t *testing.T) *schema.Store {
	t.Helper()
	s, _ := openStore(t)
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
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
