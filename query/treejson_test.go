package query

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/tallyhq/tally/attribution"
	"github.com/tallyhq/tally/ingest"
	"github.com/tallyhq/tally/safety"
)

// fillNode sets every exported field of a node to a value derived from k
// (empty when k is even for the omitempty fields' sake), so that the
// encoders are compared on set and unset fields alike; a field of a type
// it does not know fails the test, so a new field cannot slip past.
func fillNode(t *testing.T, k int, depth int) *SpanNode {
	t.Helper()
	n := &SpanNode{}
	v := reflect.ValueOf(n).Elem()
	set := k%2 == 1
	for i := range v.NumField() {
		f, name := v.Field(i), v.Type().Field(i).Name
		if !v.Type().Field(i).IsExported() || !set && name != "Children" {
			continue
		}
		switch x := f.Addr().Interface().(type) {
		case *string:
			*x = fmt.Sprintf("%s-%d <&> \"é\" \u2028 \x01", name, k)
		case *attribution.Class:
			*x = attribution.Class(fmt.Sprintf("c%d", k))
		case *safety.Effect:
			*x = safety.Effect(fmt.Sprintf("e%d", k))
		case *safety.Status:
			*x = safety.Status(fmt.Sprintf("s%d", k))
		case *time.Time:
			*x = time.Date(2026, 12, 5, 4, 30, 1, k*1000+k, time.UTC)
		case *float64:
			*x = []float64{1.5, 0.1 + 0.2, 1e-7, 3e21, 123456.789, 2.5e-6}[k%6]
		case *int:
			*x = k * 7
		case *uint32:
			*x = uint32(k)
		case *bool:
			*x = true
		case *[]string:
			*x = []string{"stop", fmt.Sprint(k)}
		case **attribution.Usage:
			*x = &attribution.Usage{Input: uint64(k), CacheRead: 2, CacheWrite: 3, Output: 4, Reasoning: 5}
		case **attribution.Cost:
			*x = &attribution.Cost{Total: 0.1 + 0.2 + 1e-12, Input: 4.420340110000005, CacheRead: 1e-7, CacheWrite: 0, Output: 12345.6}
		case *Pairs:
			*x = Pairs{{"a<b", "1"}, {"k", fmt.Sprintf("v%d\n", k)}}
		case *[]Event:
			*x = []Event{{Name: "ev", Time: time.Unix(int64(k), 5).UTC(), Attributes: map[string]any{"x": 1.0, "y": "z"}}}
		case *[]*SpanNode:
			if depth < 2 {
				*x = []*SpanNode{fillNode(t, 2*k+1, depth+1), fillNode(t, 2*k+2, depth+1)}
			} else if k%3 == 0 {
				*x = []*SpanNode{}
			}
		default:
			t.Fatalf("fillNode: field %s of type %s: teach the test (and appendJSON) about it", name, f.Type())
		}
	}
	return n
}

// decoded is a JSON text decoded into plain values, for comparing two
// encodings of the same value (one HTML-escapes, one does not).
func decoded(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	return v
}

// TestTreeJSONMatchesEncodingJSON: the run detail and a page of children
// written by AppendJSON decode to what encoding/json writes for them, for
// nodes with every field set and with none.
func TestTreeJSONMatchesEncodingJSON(t *testing.T) {
	next := 3
	d := &RunDetail{Summary: RunSummary{TraceID: "t", Name: "run", CostConfidence: "upper_bound"},
		Roots:           []*SpanNode{fillNode(t, 1, 0), fillNode(t, 2, 0)},
		Truncated:       &Truncation{TotalSpans: 9, ReturnedSpans: 3},
		CostliestSpanID: "c", CostConfidence: []ingest.Confidence{{Level: "upper_bound", Rule: "r"}}}
	got, err := d.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := decoded(t, got), decoded(t, want); !reflect.DeepEqual(g, w) {
		t.Errorf("run detail:\n got %s\nwant %s", got, want)
	}
	empty := &RunDetail{}
	got, _ = empty.AppendJSON(nil)
	want, _ = json.Marshal(empty)
	if g, w := decoded(t, got), decoded(t, want); !reflect.DeepEqual(g, w) {
		t.Errorf("empty run detail:\n got %s\nwant %s", got, want)
	}
	for _, p := range []*ChildrenPart{
		{TraceID: "t", SpanID: "s", ChildrenTotal: 5, Offset: 1, NextOffset: &next, Children: []*SpanNode{fillNode(t, 3, 1)}, Truncated: &Truncation{TotalSpans: 1}},
		{TraceID: "t", SpanID: "s"},
	} {
		got, err := p.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(p)
		if g, w := decoded(t, got), decoded(t, want); !reflect.DeepEqual(g, w) {
			t.Errorf("children:\n got %s\nwant %s", got, want)
		}
	}
}

// TestAppendFloat formats floats as encoding/json does.
func TestAppendFloat(t *testing.T) {
	for _, f := range []float64{0, -0.5, 1, 0.1 + 0.2, 1e-6, 9.99e-7, 1e-7, 1.5e-10, 1e20, 1e21, 3.4e38, math.SmallestNonzeroFloat64, -2e-9, 123456789.125} {
		want, _ := json.Marshal(f)
		if got := appendFloat(nil, f); string(got) != string(want) {
			t.Errorf("appendFloat(%v) = %s, want %s", f, got, want)
		}
	}
}
