package schema_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tallyhq/tally/internal/goldentest"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/schema"
)

// TestUpgradeAddsColumnsAndFeedsFacts puts a migrated store back in its
// shape before migration 8 (no usage_record or cost_confidence on spans
// and span_facts, a facts view over the old columns, no confidence spend
// on the run table and the rollup), applies migration 8 as an upgrade
// would, twice, and checks that every column is there in the order a new
// store has and that a span written afterwards reaches span_facts whole.
func TestUpgradeAddsColumnsAndFeedsFacts(t *testing.T) {
	ctx := context.Background()
	s := migratedStore(t)
	conn := s.Conn()
	spend := []string{"cost_exact", "cost_upper_bound", "cost_lower_bound", "cost_corrected", "cost_approximate"}
	added := map[string][]string{
		schema.TableSpans: {"usage_record", "cost_confidence"}, schema.TableSpanFacts: {"usage_record", "cost_confidence"},
		schema.TableRuns: spend, schema.TableCostRollup: spend,
	}
	fresh := map[string]string{}
	for table := range added {
		fresh[table] = columnOrder(t, s, table)
	}
	if err := conn.Exec(ctx, "DROP TABLE "+s.Table(schema.ViewSpanFacts)); err != nil {
		t.Fatal(err)
	}
	for table, cols := range added {
		for _, c := range cols {
			if err := conn.Exec(ctx, "ALTER TABLE "+s.Table(table)+" DROP COLUMN "+c); err != nil {
				t.Fatalf("drop %s.%s: %v", table, c, err)
			}
		}
	}
	// Before migration 20, span_facts stored its end_ns.
	for _, stmt := range []string{"DROP COLUMN end_ns", "ADD COLUMN end_ns UInt64 AFTER start_ns"} {
		if err := conn.Exec(ctx, "ALTER TABLE "+s.Table(schema.TableSpanFacts)+" "+stmt); err != nil {
			t.Fatal(err)
		}
	}
	for _, stmt := range schema.SpanFactsViewStatements(s, schema.SpanFactsV5) {
		if err := conn.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if err := schema.ApplyMigration(ctx, s, 8); err != nil {
			t.Fatalf("migration 8 on a store before it: %v", err)
		}
	}
	// And the later migration that changes the view (as an upgrade runs
	// every later migration): its view selects no end_ns, now an alias.
	if err := schema.ApplyMigration(ctx, s, 20); err != nil {
		t.Fatalf("migration 20 after 8: %v", err)
	}
	for table := range added {
		if got := columnOrder(t, s, table); got != fresh[table] {
			t.Errorf("%s after the upgrade:\n%s\nwant the new store's\n%s", table, got, fresh[table])
		}
	}
	now := time.Now().UTC()
	span := schema.Span{Project: "p", TraceID: strings.Repeat("a", 32), SpanID: strings.Repeat("b", 16), Start: now.Truncate(time.Second),
		StartNs: uint64(now.UnixNano()), EndNs: uint64(now.UnixNano()), SpanType: schema.TypeInference, UsageRecord: 1,
		CostSource: schema.CostClient, CostTotal: 0.5, CostConfidence: schema.ConfidenceUpperBound, IngestedAt: now}
	if err := s.InsertSpans(ctx, []schema.Span{span}); err != nil {
		t.Fatal(err)
	}
	var record uint8
	var confidence string
	if err := conn.QueryRow(ctx, "SELECT usage_record, cost_confidence FROM "+s.Table(schema.TableSpanFacts)+" FINAL WHERE span_id = ?", span.SpanID).
		Scan(&record, &confidence); err != nil {
		t.Fatalf("the span did not reach span_facts: %v", err)
	}
	if record != 1 || confidence != schema.ConfidenceUpperBound {
		t.Fatalf("span_facts holds usage_record %d, cost_confidence %q; want 1, %q", record, confidence, schema.ConfidenceUpperBound)
	}
}

// columnOrder is a table's columns, in order, with their types.
func columnOrder(t *testing.T, s *schema.Store, table string) string {
	t.Helper()
	rows, err := s.Conn().Query(context.Background(), "SELECT * FROM "+s.Table(table)+" LIMIT 0")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for _, c := range rows.ColumnTypes() {
		b.WriteString(c.Name() + " " + c.DatabaseTypeName() + "\n")
	}
	return b.String()
}

// TestUpgradeRecordsColumnKeysUnknown: migration 10 adds spans.column_keys
// where the store lacks it, in a new store's place; the rows written
// before read [ColumnKeysUnknown] (their keys were not recorded), the rows
// written after hold what ingest recorded, none included.
func TestUpgradeRecordsColumnKeysUnknown(t *testing.T) {
	ctx := context.Background()
	s := migratedStore(t)
	conn := s.Conn()
	fresh := columnOrder(t, s, schema.TableSpans)
	if err := conn.Exec(ctx, "ALTER TABLE "+s.Table(schema.TableSpans)+" DROP COLUMN column_keys"); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	if err := conn.Exec(ctx, "INSERT INTO "+s.Table(schema.TableSpans)+" (project, trace_id, span_id, start, request_model) SELECT 'p', 'old', 's', toDateTime('"+now.Format(time.DateTime)+"', 'UTC'), 'm'"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := schema.ApplyMigration(ctx, s, 10); err != nil {
			t.Fatalf("migration 10 on a store before it: %v", err)
		}
	}
	if got := columnOrder(t, s, schema.TableSpans); got != fresh {
		t.Errorf("spans after the upgrade:\n%s\nwant the new store's\n%s", got, fresh)
	}
	spans := []schema.Span{
		{Project: "p", TraceID: "new", SpanID: "s", Start: now, ColumnKeys: []string{"gen_ai.request.model"}},
		{Project: "p", TraceID: "none", SpanID: "s", Start: now},
	}
	if err := s.InsertSpans(ctx, spans); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"old": {schema.ColumnKeysUnknown}, "new": {"gen_ai.request.model"}, "none": {}}
	rows, err := conn.Query(ctx, "SELECT trace_id, column_keys FROM "+s.Table(schema.TableSpans))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string][]string{}
	for rows.Next() {
		var id string
		var keys []string
		if err := rows.Scan(&id, &keys); err != nil {
			t.Fatal(err)
		}
		got[id] = keys
	}
	if len(got) != 3 {
		t.Fatalf("rows %v", got)
	}
	for id, w := range want {
		if !slices.Equal(got[id], w) {
			t.Errorf("%s: column_keys %q, want %q", id, got[id], w)
		}
	}
}

// TestContentTextIndex: on a server with text indexes (the embedded 26.x
// engine) the content table has one; the 18.16 server has none and gets
// none.
func TestContentTextIndex(t *testing.T) {
	s := migratedStore(t)
	caps := s.Capabilities()
	if caps.Major >= 26 != caps.TextIndex {
		t.Fatalf("server %s: text indexes %v", caps.Version, caps.TextIndex)
	}
	if !caps.TextIndex {
		return
	}
	var n uint64
	if err := s.Conn().QueryRow(context.Background(), "SELECT count() FROM system.data_skipping_indices WHERE database = ? AND table = ? AND name = ? AND type = 'text'", s.Database(),
		schema.TableContent, schema.ContentTextIndex).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("%d text indexes on content, want 1", n)
	}
}

// TestTableSettings: on a server with adaptive write buffers and vertical
// merges of any size (the embedded 26.x engine) every table of tally
// writes its parts through adaptive buffers and merges column by column, a
// new store's from its CREATE and an older store's once migrations 13 and
// 16 have run; the 18.16 server has neither and its tables get no setting.
func TestTableSettings(t *testing.T) {
	ctx := context.Background()
	s := migratedStore(t)
	caps := s.Capabilities()
	if caps.Major >= 26 != caps.AdaptiveWriteBuffers || caps.Major >= 26 != caps.VerticalMerges {
		t.Fatalf("server %s: adaptive write buffers %v, vertical merges %v", caps.Version, caps.AdaptiveWriteBuffers, caps.VerticalMerges)
	}
	for _, c := range []struct {
		setting, reset string
		has            bool
		migration      int
	}{
		{"min_columns_to_activate_adaptive_write_buffer = 1", "min_columns_to_activate_adaptive_write_buffer", caps.AdaptiveWriteBuffers, 13},
		{"vertical_merge_algorithm_min_rows_to_activate = 1", "vertical_merge_algorithm_min_rows_to_activate", caps.VerticalMerges, 16},
	} {
		tables := func() map[string]bool {
			t.Helper()
			out := map[string]bool{}
			for name, create := range queryPairs(t, s, "SELECT name, create_table_query FROM system.tables WHERE database = ? AND engine LIKE '%MergeTree'", s.Database()) {
				out[name] = strings.Contains(create, c.setting)
			}
			return out
		}
		check := func(when string) {
			t.Helper()
			got := tables()
			if len(got) != 15 { // every table of tally (the migrations table included)
				t.Fatalf("%s: %d MergeTree tables: %v", when, len(got), got)
			}
			for name, has := range got {
				if has != c.has {
					t.Errorf("%s: table %s has %s: %v, want %v", when, name, c.setting, has, c.has)
				}
			}
		}
		check("a new store")
		if !c.has {
			continue
		}
		// The tables of a later migration are created with the setting: a
		// store before the migration has none of them.
		later := map[string]bool{schema.TableRunRollup: true, schema.TableRunRollupHours: true}
		for name := range tables() {
			if later[name] {
				continue
			}
			if err := s.Conn().Exec(ctx, "ALTER TABLE "+s.Table(name)+" RESET SETTING "+c.reset); err != nil {
				t.Fatal(err)
			}
		}
		for name, has := range tables() {
			if has && !later[name] {
				t.Fatalf("%s kept %s after RESET", name, c.setting)
			}
		}
		for range 2 {
			if err := schema.ApplyMigration(ctx, s, c.migration); err != nil {
				t.Fatalf("migration %d on a store before it: %v", c.migration, err)
			}
		}
		check(fmt.Sprintf("after migration %d", c.migration))
	}
}

// TestColumnCodecs checks the columns' codecs: a new store's on a server
// with codecs are the ones chosen for them (none on 18.16, which has no
// codecs); a store whose columns lost them, as one created before migration
// 15, gets them back from it (applied twice); and Recompress rewrites the
// partitions written before a time once, the rows reading the same after.
func TestColumnCodecs(t *testing.T) {
	ctx := context.Background()
	s := migratedStore(t)
	caps := s.Capabilities()
	if caps.Major >= 20 != caps.Codecs {
		t.Fatalf("server %s: codecs %v", caps.Version, caps.Codecs)
	}
	if caps.Codecs {
		codecs := func() map[string]string {
			t.Helper()
			return queryPairs(t, s, "SELECT concat(table, '.', name), compression_codec FROM system.columns WHERE database = ?", s.Database())
		}
		fresh := codecs()
		for name, want := range map[string]string{
			// spans: ZSTD(1) for the short columns (after T64 for
			// counters), but the key, version, times and long columns
			// keep the server's default (LZ4, after Delta for times).
			"spans.start":           "CODEC(Delta(4), LZ4)",
			"spans.start_ns":        "CODEC(Delta(8), LZ4)",
			"spans.ingested_at":     "CODEC(Delta(4), ZSTD(1))",
			"spans.duration_ns":     "",
			"spans.input_tokens":    "CODEC(T64, ZSTD(1))",
			"spans.attempt":         "CODEC(T64, ZSTD(1))",
			"spans.trace_id":        "",
			"spans.span_id":         "",
			"spans.version":         "",
			"spans.parent_span_id":  "CODEC(ZSTD(1))",
			"spans.cost_total":      "CODEC(ZSTD(1))",
			"spans.model":           "CODEC(ZSTD(1))",
			"spans.column_keys":     "CODEC(ZSTD(1))",
			"spans.name":            "",
			"spans.attr_keys":       "CODEC(ZSTD(1))",
			"spans.attr_values":     "",
			"spans.resource_keys":   "CODEC(ZSTD(1))",
			"spans.resource_values": "",
			// content: LZ4 (the default), after Delta for its start.
			"content.start":   "CODEC(Delta(4), LZ4)",
			"content.span_id": "",
			"content.value":   "",
			// span_facts: ZSTD(3) for every column, after the transforms.
			"span_facts.start_ns":      "CODEC(Delta(8), ZSTD(3))",
			"span_facts.end_ns":        "", // an alias (migration 20)
			"span_facts.output_tokens": "CODEC(T64, ZSTD(3))",
			"span_facts.trace_id":      "CODEC(ZSTD(3))",
			"span_facts.duration_ns":   "CODEC(ZSTD(3))",
			// The other tables keep the server's default.
			"runs.start_ns":                 "",
			"runs.tree":                     "",
			"cost_rollup_hourly.cost_total": "",
		} {
			if got := fresh[name]; got != want {
				t.Errorf("a new store's %s: codec %q, want %q", name, got, want)
			}
		}
		// Another codec where a new store has one, as a store before
		// migration 15 would have LZ4 there.
		for _, table := range []string{schema.TableSpans, schema.TableSpanFacts, schema.TableContent} {
			var cols []string
			for name, codec := range fresh {
				if c, ok := strings.CutPrefix(name, table+"."); ok && codec != "" {
					cols = append(cols, "MODIFY COLUMN "+c+" CODEC(ZSTD(1))")
				}
			}
			if err := s.Conn().Exec(ctx, "ALTER TABLE "+s.Table(table)+" "+strings.Join(cols, ", ")); err != nil {
				t.Fatal(err)
			}
		}
		if got := codecs()["span_facts.start_ns"]; got != "CODEC(ZSTD(1))" {
			t.Fatalf("span_facts.start_ns after setting ZSTD(1): %q", got)
		}
		for range 2 {
			if err := schema.ApplyMigration(ctx, s, 15); err != nil {
				t.Fatalf("migration 15 on a store before it: %v", err)
			}
		}
		got := codecs()
		for name, want := range fresh {
			if got[name] != want {
				t.Errorf("after migration 15, %s: codec %q, want the new store's %q", name, got[name], want)
			}
		}
		// A store of schema 17 (the spans' short columns in LZ4, the text
		// index's posting lists uncompressed) gets the row codecs from
		// migration 18.
		var cols []string
		for name, codec := range fresh {
			if c, ok := strings.CutPrefix(name, schema.TableSpans+"."); ok && strings.Contains(codec, "ZSTD(1)") {
				cols = append(cols, "MODIFY COLUMN "+c+" CODEC(LZ4)")
			}
		}
		if err := s.Conn().Exec(ctx, "ALTER TABLE "+s.Table(schema.TableSpans)+" "+strings.Join(cols, ", ")); err != nil {
			t.Fatal(err)
		}
		const postings = "text_index_posting_list_codec = 'bitpacking'"
		if caps.PostingListCodec {
			if create := createQuery(t, s, schema.TableContent); !strings.Contains(create, postings) {
				t.Errorf("a new store's content lacks %s: %s", postings, create)
			}
			if err := s.Conn().Exec(ctx, "ALTER TABLE "+s.Table(schema.TableContent)+" RESET SETTING text_index_posting_list_codec"); err != nil {
				t.Fatal(err)
			}
			if create := createQuery(t, s, schema.TableContent); strings.Contains(create, postings) {
				t.Fatalf("content after RESET SETTING: %s", create)
			}
		}
		if err := schema.ApplyMigration(ctx, s, 18); err != nil {
			t.Fatalf("migration 18 on a store before it: %v", err)
		}
		got = codecs()
		for name, want := range fresh {
			if got[name] != want {
				t.Errorf("after migration 18, %s: codec %q, want the new store's %q", name, got[name], want)
			}
		}
		if create := createQuery(t, s, schema.TableContent); caps.PostingListCodec && !strings.Contains(create, postings) {
			t.Errorf("content after migration 18 lacks %s: %s", postings, create)
		}
	} else if create := createQuery(t, s, schema.TableSpans); strings.Contains(create, "CODEC") {
		t.Errorf("server %s without codecs, spans created with one: %s", caps.Version, create)
	}
	if since, ok, err := s.CodecsSince(ctx); err != nil || ok != caps.Codecs || ok && time.Since(since) > time.Hour {
		t.Errorf("CodecsSince = %v, %v, %v; want now-ish, %v, nil", since, ok, err, caps.Codecs)
	}

	// Two days of spans: two partitions of spans and two of span_facts
	// (its view fills it from the same INSERT), each one part.
	rows := blockRows()
	for i := range rows[5:] {
		r := &rows[5+i]
		r.Start = r.Start.Add(24 * time.Hour)
		r.StartNs += uint64(24 * time.Hour)
	}
	if err := s.InsertSpans(ctx, rows); err != nil {
		t.Fatal(err)
	}
	partNames := func() map[string]string {
		t.Helper()
		return queryPairs(t, s, "SELECT concat(table, '/', name), '' FROM system.parts WHERE database = ? AND active AND table IN ('spans', 'span_facts')", s.Database())
	}
	beforeParts := partNames()
	start := time.Now().Truncate(time.Second)
	var seen []string
	n, err := s.Recompress(ctx, start.Add(time.Hour), func(w schema.Rewrite) {
		seen = append(seen, w.Table+"/"+w.Partition)
		if w.Done != len(seen) || w.Total != 4 || w.Rows != 5 {
			t.Errorf("progress %+v, want done %d of 4, 5 rows", w, len(seen))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"span_facts/20261101", "span_facts/20261102", "spans/20261101", "spans/20261102"}; n != 4 || !slices.Equal(seen, want) {
		t.Errorf("Recompress rewrote %d: %v, want %v", n, seen, want)
	}
	after := partNames()
	for p := range after {
		if _, ok := beforeParts[p]; ok {
			t.Errorf("part %s is still active after its partition was rewritten (all parts: %v)", p, after)
		}
	}
	var count, spans uint64
	if err := s.Conn().QueryRow(ctx, "SELECT count(), uniqExact(span_id, name, start_ns) FROM "+s.Table(schema.TableSpans)).Scan(&count, &spans); err != nil {
		t.Fatal(err)
	}
	if count != 10 || spans != 10 {
		t.Errorf("after Recompress: %d rows, %d distinct spans; want 10, 10", count, spans)
	}
	// Resumed: everything is newer than when the first call started.
	n, err = s.Recompress(ctx, start, func(w schema.Rewrite) { t.Errorf("rewrote %+v again", w) })
	if err != nil || n != 0 {
		t.Errorf("second Recompress = %d, %v; want 0, nil", n, err)
	}
}

// queryPairs runs q, which selects two strings, into a map from the first
// to the second.
func queryPairs(t *testing.T, s *schema.Store, q string, args ...any) map[string]string {
	t.Helper()
	rows, err := s.Conn().Query(context.Background(), q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		out[k] = v
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// createQuery is the CREATE statement of one of s's tables.
func createQuery(t *testing.T, s *schema.Store, table string) string {
	t.Helper()
	var q string
	if err := s.Conn().QueryRow(context.Background(), "SELECT create_table_query FROM system.tables WHERE database = ? AND name = ?", s.Database(), table).Scan(&q); err != nil {
		t.Fatal(err)
	}
	return q
}

// TestRecompressReadsTheSame is the upgrade's promise on data: a store's
// costs, run list and run details read the same before and after migration
// 15 and the rewrite of its partitions (the golden corpus, delivered twice,
// so the rewrite also collapses duplicates the reads were deduplicating).
// Where the server has codecs the corpus is written as a store before the
// migrations would have (the span tables in LZ4).
func TestRecompressReadsTheSame(t *testing.T) {
	ctx := context.Background()
	s := migratedStore(t)
	if s.Capabilities().Codecs {
		for _, table := range []string{schema.TableSpans, schema.TableSpanFacts, schema.TableContent} {
			var cols []string
			for name, codec := range queryPairs(t, s, "SELECT name, compression_codec FROM system.columns WHERE database = ? AND table = ?", s.Database(), table) {
				if codec != "" {
					cols = append(cols, "MODIFY COLUMN "+name+" CODEC(LZ4)")
				}
			}
			if err := s.Conn().Exec(ctx, "ALTER TABLE "+s.Table(table)+" "+strings.Join(cols, ", ")); err != nil {
				t.Fatal(err)
			}
		}
	}
	spans := goldentest.LoadCorpus(t, "../query/testdata/golden.json", "golden", goldentest.Builtin(t))
	goldentest.Insert(t, s, spans, 1)
	goldentest.Insert(t, s, spans, 2)
	r := query.NewReader(s)
	since, until := goldentest.MustTime(t, "2026-01-10T00:00:00Z"), goldentest.MustTime(t, "2026-01-11T00:00:00Z")
	answers := func() string {
		t.Helper()
		return marshalled(t, slices.Concat(goldenCosts(t, r, since, until), runsRead(t, r, "golden", since, until)))
	}
	before := answers()
	if !strings.Contains(before, `"trace_id"`) {
		t.Fatalf("no runs read: %s", before)
	}
	for _, m := range []int{15, 18} {
		if err := schema.ApplyMigration(ctx, s, m); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.Recompress(ctx, time.Now().Add(time.Hour), nil)
	if err != nil || n == 0 {
		t.Fatalf("Recompress = %d, %v; want the corpus's partitions rewritten", n, err)
	}
	if s.Capabilities().Codecs {
		var codec string
		if err := s.Conn().QueryRow(ctx, "SELECT compression_codec FROM system.columns WHERE database = ? AND table = ? AND name = 'cost_total'",
			s.Database(), schema.TableSpanFacts).Scan(&codec); err != nil || codec != "CODEC(ZSTD(3))" {
			t.Errorf("span_facts.cost_total after migration 15: %q, %v; want CODEC(ZSTD(3))", codec, err)
		}
		if err := s.Conn().QueryRow(ctx, "SELECT compression_codec FROM system.columns WHERE database = ? AND table = ? AND name = 'parent_span_id'",
			s.Database(), schema.TableSpans).Scan(&codec); err != nil || codec != "CODEC(ZSTD(1))" {
			t.Errorf("spans.parent_span_id after migration 18: %q, %v; want CODEC(ZSTD(1))", codec, err)
		}
	}
	if after := answers(); after != before {
		t.Errorf("answers changed by the rewrite:\nbefore %s\nafter  %s", before, after)
	}
}

// TestDictionaryNamesMigration: a store created before migration 19 (span
// names and attribute and resource keys as String) takes their dictionary
// type from it where the server has LowCardinality, the server rewrites the
// parts stored before (WaitMutations sees it through), and every answer —
// costs, the run list, each run's detail, searches on the name and on the
// keys — reads the same before and after. On 18.16 the migration changes
// nothing.
func TestDictionaryNamesMigration(t *testing.T) {
	ctx := context.Background()
	s := migratedStore(t)
	lc := s.Capabilities().LowCardinality
	types := func() map[string]string {
		t.Helper()
		return queryPairs(t, s, "SELECT concat(table, '.', name), type FROM system.columns WHERE database = ? AND table IN (?, ?) AND name IN ('name', 'attr_keys', 'attr_values', 'resource_keys')",
			s.Database(), schema.TableSpans, schema.TableSpanFacts)
	}
	want := map[string]string{"spans.name": "String", "spans.attr_keys": "Array(String)", "spans.resource_keys": "Array(String)",
		"spans.attr_values": "Array(String)", "span_facts.name": "String"}
	if lc {
		want["spans.name"], want["span_facts.name"] = "LowCardinality(String)", "LowCardinality(String)"
		want["spans.attr_keys"], want["spans.resource_keys"] = "Array(LowCardinality(String))", "Array(LowCardinality(String))"
	}
	if got := types(); !maps.Equal(got, want) {
		t.Fatalf("a new store's types: %v, want %v", got, want)
	}
	if lc {
		// The store as it was before migration 19.
		codecs := queryPairs(t, s, "SELECT concat(table, '.', name), compression_codec FROM system.columns WHERE database = ? AND name = 'name'", s.Database())
		keysCodec := "" // a store of schema 18 kept the keys in LZ4
		if s.Capabilities().Codecs {
			keysCodec = " CODEC(LZ4)"
		}
		for stmt, table := range map[string]string{
			"MODIFY COLUMN name String " + codecs["spans.name"] + ", MODIFY COLUMN attr_keys Array(String)" + keysCodec +
				", MODIFY COLUMN resource_keys Array(String)" + keysCodec: schema.TableSpans,
			"MODIFY COLUMN name String " + codecs["span_facts.name"]: schema.TableSpanFacts,
		} {
			if err := s.Conn().Exec(ctx, "ALTER TABLE "+s.Table(table)+" "+stmt); err != nil {
				t.Fatal(err)
			}
		}
	}
	before19 := types()
	for _, c := range []string{"spans.name", "spans.attr_keys", "spans.resource_keys", "span_facts.name"} {
		if strings.Contains(before19[c], "LowCardinality") {
			t.Fatalf("%s before migration 19: %s", c, before19[c])
		}
	}

	spans := goldentest.LoadCorpus(t, "../query/testdata/golden.json", "golden", goldentest.Builtin(t))
	goldentest.Insert(t, s, spans, 1)
	goldentest.Insert(t, s, spans, 2)
	// Runs of one span each whose names and keys the searches below tell
	// apart, one with a key "" (which the 26.x engine's has() does not find
	// in a dictionary array: the run's detail still shows it).
	base := time.Now().Add(-time.Hour).Truncate(time.Second).UTC()
	var own []schema.Span
	for i, x := range []struct {
		name     string
		keys     []string
		resource string
	}{
		{"plan trip", []string{"app.tenant", "app.plan"}, "travel"},
		{"book hotel", []string{"app.tenant"}, "travel"},
		{"plan trip", nil, "billing"},
		{"summarize", []string{"", "app.plan"}, "billing"},
	} {
		start := base.Add(time.Duration(i) * time.Minute)
		values := make([]string, len(x.keys))
		for j := range values {
			values[j] = fmt.Sprintf("v%d", j)
		}
		own = append(own, schema.Span{Project: "p", TraceID: fmt.Sprintf("%032x", 0xd1c0+i), SpanID: fmt.Sprintf("%016x", i+1),
			Start: start, StartNs: uint64(start.UnixNano()), EndNs: uint64(start.UnixNano()) + 1e9, DurationNs: 1e9,
			Name: x.name, Service: x.resource, AttrKeys: x.keys, AttrValues: values,
			ResourceKeys: []string{"service.name"}, ResourceValues: []string{x.resource}, ColumnKeys: []string{}, IngestedAt: start})
	}
	goldentest.Insert(t, s, own, 1)

	r := query.NewReader(s)
	since, until := goldentest.MustTime(t, "2026-01-10T00:00:00Z"), goldentest.MustTime(t, "2026-01-11T00:00:00Z")
	searches := []struct {
		q    string
		want []string // the runs' names, newest first
	}{
		{`{ name = "plan trip" }`, []string{"plan trip", "plan trip"}},
		{`{ span.app.tenant = "v0" }`, []string{"book hotel", "plan trip"}},
		{`{ .app.plan != nil }`, []string{"summarize", "plan trip"}},
		{`{ resource.service.name = "billing" }`, []string{"summarize", "plan trip"}},
	}
	answers := func() string {
		t.Helper()
		out := slices.Concat(goldenCosts(t, r, since, until), runsRead(t, r, "golden", since, until),
			runsRead(t, r, "p", base.Add(-time.Minute), base.Add(time.Hour)))
		for _, tc := range searches {
			page, err := r.Search(ctx, query.SearchRequest{Project: "p", Query: tc.q, Since: base.Add(-time.Minute), Until: base.Add(time.Hour)})
			if err != nil {
				t.Fatalf("%s: %v", tc.q, err)
			}
			var got []string
			for _, run := range page.Runs {
				got = append(got, run.Name)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("%s: runs %v, want %v", tc.q, got, tc.want)
			}
			out = append(out, got)
		}
		return marshalled(t, out)
	}
	before := answers()
	if !strings.Contains(before, `"summarize"`) || !strings.Contains(before, `"invoke_agent planner"`) {
		t.Fatalf("the runs not read: %s", before)
	}
	if !strings.Contains(before, `{"":"v0","app.plan":"v1"}`) {
		t.Fatalf("the attribute of key \"\" not in the run's detail: %s", before)
	}

	for range 2 {
		if err := schema.ApplyMigration(ctx, s, 19); err != nil {
			t.Fatalf("migration 19 on a store before it: %v", err)
		}
	}
	if got := types(); !maps.Equal(got, want) {
		t.Errorf("types after migration 19: %v, want a new store's %v", got, want)
	}
	if s.Capabilities().Codecs {
		codecs := queryPairs(t, s, "SELECT name, compression_codec FROM system.columns WHERE database = ? AND table = ? AND name IN ('attr_keys', 'resource_keys')",
			s.Database(), schema.TableSpans)
		if want := map[string]string{"attr_keys": "CODEC(ZSTD(1))", "resource_keys": "CODEC(ZSTD(1))"}; !maps.Equal(codecs, want) {
			t.Errorf("the keys' codecs after migration 19: %v, want %v", codecs, want)
		}
	}
	// What the wait reports (if the rewrite outlasts the first check) is
	// the migration's: a column's type changed in spans or span_facts.
	if err := s.WaitMutations(ctx, 20*time.Millisecond, time.Minute, func(ms []schema.Mutation) {
		for _, m := range ms {
			if m.Table != schema.TableSpans && m.Table != schema.TableSpanFacts || !strings.Contains(m.Command, "MODIFY COLUMN") {
				t.Errorf("a rewrite reported that migration 19 did not ask for: %+v", m)
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	if ms, err := s.Mutations(ctx); err != nil || len(ms) != 0 {
		t.Fatalf("rewrites left after WaitMutations: %v, %v", ms, err)
	}
	if lc {
		// Every part stored before now holds the dictionary type.
		stored := queryPairs(t, s, "SELECT concat(table, '.', column, '.', type), toString(count()) FROM system.parts_columns WHERE database = ? AND active AND table IN (?, ?) AND column IN ('name', 'attr_keys') GROUP BY table, column, type",
			s.Database(), schema.TableSpans, schema.TableSpanFacts)
		for c, n := range stored {
			if !strings.Contains(c, "LowCardinality") {
				t.Errorf("%s parts not rewritten: %s", n, c)
			}
		}
		if len(stored) != 3 {
			t.Errorf("parts' types %v: want spans.name, spans.attr_keys and span_facts.name", stored)
		}
	}
	if after := answers(); after != before {
		t.Errorf("answers changed by the migration:\nbefore %s\nafter  %s", before, after)
	}
}

// TestDerivedFactsEndMigration: span_facts.end_ns is computed from the
// start and duration since migration 20. A store put back in its shape
// before it (the end stored, the view selecting it) stores the golden
// corpus, then takes migration 20 twice: the column is the alias and no
// part stores it, every answer that reads span_facts (costs, tools, the
// run list of runs read live, each run's detail) reads the same, and a
// span written after reaches span_facts with its end.
func TestDerivedFactsEndMigration(t *testing.T) {
	ctx := context.Background()
	s := migratedStore(t)
	conn := s.Conn()
	kind := func() string {
		t.Helper()
		var k, expr string
		if err := conn.QueryRow(ctx, "SELECT default_kind, default_expression FROM system.columns WHERE database = ? AND table = ? AND name = 'end_ns'",
			s.Database(), schema.TableSpanFacts).Scan(&k, &expr); err != nil {
			t.Fatal(err)
		}
		return k + " " + expr
	}
	if got := kind(); got != "ALIAS start_ns + duration_ns" {
		t.Fatalf("a new store's span_facts.end_ns: %q, want the alias", got)
	}
	codec := ""
	if s.Capabilities().Codecs {
		codec = " CODEC(Delta(8), ZSTD(3))"
	}
	if err := conn.Exec(ctx, "DROP TABLE "+s.Table(schema.ViewSpanFacts)); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{"DROP COLUMN end_ns", "ADD COLUMN end_ns UInt64" + codec + " AFTER start_ns"} {
		if err := conn.Exec(ctx, "ALTER TABLE "+s.Table(schema.TableSpanFacts)+" "+stmt); err != nil {
			t.Fatal(err)
		}
	}
	for _, stmt := range schema.SpanFactsViewStatements(s, schema.SpanFactsV8) {
		if err := conn.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	if got := kind(); got != " " {
		t.Fatalf("span_facts.end_ns before migration 20: %q, want stored", got)
	}

	spans := goldentest.LoadCorpus(t, "../query/testdata/golden.json", "golden", goldentest.Builtin(t))
	goldentest.Insert(t, s, spans, 1)
	stored := func() uint64 {
		t.Helper()
		var n uint64
		if err := conn.QueryRow(ctx, "SELECT count() FROM system.parts_columns WHERE database = ? AND table = ? AND column = 'end_ns' AND active",
			s.Database(), schema.TableSpanFacts).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if stored() == 0 {
		t.Fatal("no part of span_facts stores end_ns before migration 20")
	}
	// Every span's end in span_facts, worked out from the corpus.
	wantEnds := map[string]uint64{}
	for _, sp := range spans {
		wantEnds[sp.SpanID] = sp.EndNs
	}
	ends := func() {
		t.Helper()
		rows, err := conn.Query(ctx, "SELECT span_id, end_ns FROM "+s.Table(schema.TableSpanFacts)+" FINAL WHERE project = 'golden'")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			var id string
			var end uint64
			if err := rows.Scan(&id, &end); err != nil {
				t.Fatal(err)
			}
			if end != wantEnds[id] {
				t.Errorf("span %s: span_facts.end_ns %d, want %d", id, end, wantEnds[id])
			}
			n++
		}
		if n != len(wantEnds) {
			t.Errorf("%d spans in span_facts, want %d", n, len(wantEnds))
		}
	}
	ends()

	r := query.NewReader(s)
	since, until := goldentest.MustTime(t, "2026-01-10T00:00:00Z"), goldentest.MustTime(t, "2026-01-11T00:00:00Z")
	answers := func() string {
		t.Helper()
		tools, err := r.Tools(ctx, query.ToolFilter{Window: query.Window{Project: "golden", Since: since, Until: until}, PerMinute: true})
		if err != nil {
			t.Fatal(err)
		}
		return marshalled(t, slices.Concat(goldenCosts(t, r, since, until), []any{tools}, runsRead(t, r, "golden", since, until)))
	}
	before := answers()
	if !strings.Contains(before, `"invoke_agent planner"`) || !strings.Contains(before, `"p95_ms"`) {
		t.Fatalf("the corpus not read: %s", before)
	}

	for range 2 {
		if err := schema.ApplyMigration(ctx, s, 20); err != nil {
			t.Fatalf("migration 20: %v", err)
		}
	}
	if got := kind(); got != "ALIAS start_ns + duration_ns" {
		t.Fatalf("span_facts.end_ns after migration 20: %q, want the alias", got)
	}
	if n := stored(); n != 0 {
		t.Errorf("%d parts of span_facts still store end_ns", n)
	}
	ends()
	if after := answers(); after != before {
		t.Errorf("answers changed by the migration:\nbefore %s\nafter  %s", before, after)
	}
	// The view feeds span_facts again, without the column.
	now := time.Now().UTC()
	span := schema.Span{Project: "golden", TraceID: strings.Repeat("c", 32), SpanID: strings.Repeat("d", 16), Start: now.Truncate(time.Second),
		StartNs: uint64(now.UnixNano()), EndNs: uint64(now.UnixNano()) + 1500, DurationNs: 1500, SpanType: schema.TypeInference, IngestedAt: now}
	goldentest.Insert(t, s, []schema.Span{span}, 1)
	wantEnds[span.SpanID] = span.EndNs
	ends()
}

// goldenCosts reads the golden corpus's cost reports by agent and by model
// over [since, until), by hour: what the upgrade tests compare before and
// after a change of the store.
func goldenCosts(t *testing.T, r *query.Reader, since, until time.Time) []any {
	t.Helper()
	var out []any
	for _, by := range []string{query.ByAgent, query.ByModel} {
		rep, err := r.Costs(context.Background(), query.CostFilter{Project: "golden", By: by, Since: since, Until: until, Bucket: query.BucketHour})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rep)
	}
	return out
}

// runsRead reads project's run list over [since, until) and each run's
// detail.
func runsRead(t *testing.T, r *query.Reader, project string, since, until time.Time) []any {
	t.Helper()
	ctx := context.Background()
	page, err := r.Runs(ctx, query.RunFilter{Project: project, Since: since, Until: until, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	out := []any{page}
	for _, run := range page.Runs {
		d, err := r.Run(ctx, project, run.TraceID)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// marshalled is answers as JSON, to compare byte for byte.
func marshalled(t *testing.T, answers []any) string {
	t.Helper()
	b, err := json.Marshal(answers)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
