package ingest

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/tallyhq/tally/ingest/wire"
	"github.com/tallyhq/tally/internal/conformance"
)

// FuzzNormalize is the differential test of the two decode paths: arbitrary
// bytes decoded by pdata and normalized (the JSON path) and decoded by the
// wire Decoder and normalized (the protobuf path) must be refused alike or
// give identical rows and rejections, under tight limits and every privacy
// action. Every span is kept or rejected, and nothing panics. The seeds are
// the whole conformance corpus (real instrumentations' exports), so plain
// go test checks the two paths agree on every one of them.
func FuzzNormalize(f *testing.F) {
	f.Add(marshalled(f, loadFixture(f, "vercel_trip.json")))
	f.Add(marshalled(f, realisticRequest(f, 40)))
	f.Add([]byte{})
	scenarios, err := conformance.Load("testdata/conformance")
	if err != nil {
		f.Fatal(err)
	}
	for _, sc := range scenarios {
		td, err := sc.Traces()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(marshalled(f, td))
	}
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	optsOf := func(tight bool) Options {
		o := Options{Project: "fuzz", Pricer: &fakePricer{}, Usage: DefaultUsagePolicy(), Now: func() time.Time { return now }}
		if tight {
			o.Limits = Limits{MaxAttrValueBytes: 16, MaxContentBytes: 32, MaxAttrsPerSpan: 4, MaxEventsPerSpan: 2}
			o.Privacy = Privacy{Rules: map[string]Action{
				"user.id":                 ActionHash,
				"ai.toolCall.args":        ActionDrop,
				"gen_ai.tool.call.result": ActionRedact,
			}}
		}
		return o
	}
	var u ptrace.ProtoUnmarshaler
	var d wire.Decoder
	f.Fuzz(func(t *testing.T, data []byte) {
		td, err := u.UnmarshalTraces(data)
		tr, werr := d.Decode(data)
		if (err == nil) != (werr == nil) {
			t.Fatalf("pdata error %v, wire error %v", err, werr)
		}
		if err != nil {
			return
		}
		for _, tight := range []bool{false, true} {
			opts := optsOf(tight)
			viaPdata, rejPdata := Normalize(td, opts)
			viaWire, rejWire := NormalizeTraces(tr, opts)
			if rejPdata != rejWire {
				t.Fatalf("tight %v: rejected %+v via pdata, %+v via wire", tight, rejPdata, rejWire)
			}
			if d := batchDiff(viaPdata, viaWire); d != "" {
				t.Fatalf("tight %v: rows differ: %s", tight, d)
			}
			if len(viaWire.Spans)+rejWire.Spans != td.SpanCount() {
				t.Fatalf("kept %d + rejected %d != %d spans", len(viaWire.Spans), rejWire.Spans, td.SpanCount())
			}
		}
	})
}

// batchDiff names the first field in which two batches differ, "" when
// they are equal.
func batchDiff(a, b Batch) string {
	if len(a.Spans) != len(b.Spans) || len(a.Contents) != len(b.Contents) {
		return fmt.Sprintf("%d spans, %d contents via pdata; %d, %d via wire", len(a.Spans), len(a.Contents), len(b.Spans), len(b.Contents))
	}
	for i := range a.Spans {
		if d := structDiff(a.Spans[i], b.Spans[i]); d != "" {
			return fmt.Sprintf("span %d: %s", i, d)
		}
	}
	for i := range a.Contents {
		if d := structDiff(a.Contents[i], b.Contents[i]); d != "" {
			return fmt.Sprintf("content %d: %s", i, d)
		}
	}
	return ""
}

func structDiff(a, b any) string {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	for f := range va.NumField() {
		if x, y := va.Field(f).Interface(), vb.Field(f).Interface(); !reflect.DeepEqual(x, y) {
			return fmt.Sprintf("%s is %#v via pdata, %#v via wire", va.Type().Field(f).Name, x, y)
		}
	}
	return ""
}
