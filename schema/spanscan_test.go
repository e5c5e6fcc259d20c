package schema_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tallyhq/tally/schema"
)

// ScanSpans reads the same rows as clickhouse-go's reflective Select, for
// arrays whose elements hold the encoding's own separators, digits, empty
// strings and multi-byte characters, and for empty arrays.
func TestScanSpansMatchesSelect(t *testing.T) {
	ctx := context.Background()
	s := migratedStore(t)
	start := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	base := schema.Span{Project: "p", TraceID: strings.Repeat("ef", 16), Start: start,
		StartNs: uint64(start.UnixNano()), EndNs: uint64(start.UnixNano()) + 10, DurationNs: 10,
		Name: "chat", SpanType: schema.TypeInference, TTFCMs: 12.5, CostTotal: 0.125, Attempt: 3,
		UsageUnreconciled: 1, IngestedAt: start, Version: 7}
	tricky := base
	tricky.SpanID = strings.Repeat("1", 16)
	tricky.FinishReasons = []string{"stop", ""}
	tricky.AttrKeys = []string{"12:34", "a", "é"}
	tricky.AttrValues = []string{"3:abc", "", "naïve 🦊 ,;:"}
	tricky.ResourceKeys = []string{"service.name"}
	tricky.ResourceValues = []string{"agent"}
	tricky.EventNames = []string{"exception", "retry"}
	tricky.EventTimeNs = []uint64{0, 18446744073709551615}
	tricky.EventAttrs = []string{`{"a":"1:2"}`, `{}`}
	tricky.ColumnKeys = []string{"gen_ai.request.model", "3:x"}
	empty := base
	empty.SpanID = strings.Repeat("2", 16)
	if err := s.InsertSpans(ctx, []schema.Span{tricky, empty}); err != nil {
		t.Fatal(err)
	}
	var want []schema.Span
	if err := s.Conn().Select(ctx, &want, "SELECT "+schema.SpanColumnNames()+" FROM "+s.Table(schema.TableSpans)+" ORDER BY span_id"); err != nil {
		t.Fatal(err)
	}
	rows, err := s.Conn().Query(ctx, "SELECT "+schema.SpanSelectList()+" FROM "+s.Table(schema.TableSpans)+" ORDER BY span_id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got, err := schema.ScanSpans(rows)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 2 || len(got) != 2 {
		t.Fatalf("read %d rows with Select and %d with ScanSpans, want 2 each", len(want), len(got))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("row %d:\n ScanSpans %+v\n Select    %+v", i, got[i], want[i])
		}
	}
	if got[0].AttrValues[2] != "naïve 🦊 ,;:" || got[0].EventTimeNs[1] != 18446744073709551615 {
		t.Errorf("tricky row read back as %q / %v", got[0].AttrValues, got[0].EventTimeNs)
	}
}
