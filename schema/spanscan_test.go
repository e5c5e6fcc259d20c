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
// arrays and strings that hold the encoding's own separators, digits, empty
// strings and multi-byte characters, and for empty arrays; so does the
// projection with its strings unpacked.
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
	tricky.Name = "12:chat:"
	tricky.StatusMessage = "3:é 🦊"
	tricky.FinishReasons = []string{"stop", ""}
	tricky.AttrKeys = []string{"12:34", "a", "é", "quotes", "bytes"}
	// Every byte value (the escapes of ClickHouse's quoted strings among
	// them) and values that look like the arrays' text form.
	every := make([]byte, 256)
	for i := range every {
		every[i] = byte(i)
	}
	tricky.AttrValues = []string{"3:abc", "", "naïve 🦊 ,;:", `['x\'y','\',']`, string(every)}
	tricky.ResourceKeys = []string{"service.name"}
	tricky.ResourceValues = []string{"agent"}
	tricky.EventNames = []string{"exception", "retry"}
	tricky.EventTimeNs = []uint64{0, 18446744073709551615}
	tricky.EventAttrs = []string{`{"a":"1:2"}`, `{"q":"it's \"\\\" \n"}`}
	tricky.ColumnKeys = []string{"gen_ai.request.model", "3:x"}
	empty := base
	empty.SpanID = strings.Repeat("2", 16)
	first := base // read first: its empty arrays come before any element
	first.SpanID = strings.Repeat("0", 16)
	if err := s.InsertSpans(ctx, []schema.Span{tricky, empty, first}); err != nil {
		t.Fatal(err)
	}
	var want []schema.Span
	if err := s.Conn().Select(ctx, &want, "SELECT "+schema.SpanColumnNames()+" FROM "+s.Table(schema.TableSpans)+" ORDER BY span_id"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		name string
		cols schema.SpanProjection
	}{{"packed", schema.SpanColumnsAll()}, {"unpacked", schema.SpanColumnsAll().Unpacked()}} {
		rows, err := s.Conn().Query(ctx, "SELECT "+p.cols.List()+" FROM "+s.Table(schema.TableSpans)+" ORDER BY span_id")
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.cols.Scan(rows, 0)
		rows.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(want) != 3 || len(got) != 3 {
			t.Fatalf("%s: read %d rows with Select and %d with Scan, want 3 each", p.name, len(want), len(got))
		}
		for i := range want {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Errorf("%s, row %d:\n Scan   %+v\n Select %+v", p.name, i, got[i], want[i])
			}
		}
		if got[1].AttrValues[2] != "naïve 🦊 ,;:" || got[1].AttrValues[4] != string(every) || got[1].EventTimeNs[1] != 18446744073709551615 || got[1].Name != "12:chat:" {
			t.Errorf("%s: tricky row read back as %q / %v / %q", p.name, got[1].AttrValues, got[1].EventTimeNs, got[1].Name)
		}
	}
}
