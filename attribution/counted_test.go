package attribution

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/tallyhq/tally/schema"
)

// usage builds an inference span with its own usage over [start, end).
func usage(id, parent string, start, end uint64, in, out uint64) UsageSpan {
	return UsageSpan{ID: id, ParentID: parent, SpanType: schema.TypeInference, UsageMode: schema.UsageInclusive,
		StartNs: start, EndNs: end, Input: in, Output: out}
}

func TestCountedUsage(t *testing.T) {
	agg := func(id string, in, out uint64) UsageSpan {
		return UsageSpan{ID: id, SpanType: schema.TypeAgent, UsageMode: schema.UsageAggregated, StartNs: 0, EndNs: 100, Input: in, Output: out}
	}
	for _, c := range []struct {
		name     string
		spans    []UsageSpan
		want     []bool
		fromAggr bool
	}{
		{"one call counts", []UsageSpan{usage("a", "", 0, 10, 100, 10)}, []bool{true}, false},
		{"wrapper over a child inference span: the child counts",
			[]UsageSpan{usage("w", "", 0, 10, 100, 10), usage("c", "w", 1, 9, 100, 10)}, []bool{false, true}, false},
		{"wrapper with other buckets than its child still yields to it",
			[]UsageSpan{usage("w", "", 0, 10, 120, 12), usage("c", "w", 1, 9, 100, 10)}, []bool{false, true}, false},
		{"sibling within the interval, same buckets: the inner one counts",
			[]UsageSpan{usage("outer", "p", 0, 10, 100, 10), usage("inner", "p", 2, 8, 100, 10)}, []bool{false, true}, false},
		{"sibling with the same interval and buckets: the smaller span id counts",
			[]UsageSpan{usage("b", "p", 0, 10, 100, 10), usage("a", "p", 0, 10, 100, 10)}, []bool{false, true}, false},
		{"sibling within the interval with other buckets: both count",
			[]UsageSpan{usage("x", "p", 0, 10, 100, 10), usage("y", "p", 2, 8, 50, 5)}, []bool{true, true}, false},
		{"sibling outside the interval, same buckets: both count (two calls)",
			[]UsageSpan{usage("x", "p", 0, 10, 100, 10), usage("y", "p", 20, 30, 100, 10)}, []bool{true, true}, false},
		{"aggregated span repeats counted children: not counted",
			[]UsageSpan{agg("agent", 200, 20), usage("c", "agent", 1, 9, 100, 10)}, []bool{false, true}, false},
		{"only aggregated usage: the largest aggregated span counts",
			[]UsageSpan{agg("outer", 500, 50), agg("inner", 300, 30)}, []bool{true, false}, true},
		{"no usage at all: nothing counts",
			[]UsageSpan{{ID: "t", SpanType: schema.TypeTool, UsageMode: schema.UsageNone}}, []bool{false}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, fromAggr := CountedUsage(c.spans)
			if !reflect.DeepEqual(got, c.want) || fromAggr != c.fromAggr {
				t.Fatalf("CountedUsage = %v, from aggregate %v; want %v, %v", got, fromAggr, c.want, c.fromAggr)
			}
		})
	}
}

func TestCostCounts(t *testing.T) {
	for _, c := range []struct {
		counted bool
		mode    string
		want    bool
	}{
		{true, schema.UsageInclusive, true},
		{false, schema.UsageInclusive, false}, // a wrapper of another span's call
		{false, schema.UsageAggregated, false},
		{true, schema.UsageAggregated, true}, // the run's aggregated fallback
		{false, schema.UsageNone, true},      // a cost without usage always counts
	} {
		if got := CostCounts(c.counted, c.mode); got != c.want {
			t.Errorf("CostCounts(%v, %q) = %v, want %v", c.counted, c.mode, got, c.want)
		}
	}
}

// TestCostJSONHasNoFloatNoise: sums of prices carry float noise
// (0.1 + 0.2 = 0.30000000000000004); the API writes amounts rounded to
// 1e-10 USD.
func TestCostJSONHasNoFloatNoise(t *testing.T) {
	c := Cost{Total: 0.1 + 0.2, Input: 4.420340110000005, Output: 1e-12}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"total_usd":0.3,"input_usd":4.42034011,"cache_read_usd":0,"cache_write_usd":0,"output_usd":0}`
	if string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
}

// TestRepeatedCallsMatchesPairwise: the sorted scan of repeatedCalls marks
// exactly the spans that some other span repeats by SameCall, the rule's
// pairwise definition, on random runs dense in equal starts, ends and
// buckets (where the tie rules matter).
func TestRepeatedCallsMatchesPairwise(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for run := 0; run < 2000; run++ {
		n := 1 + rng.IntN(12)
		spans := make([]UsageSpan, n)
		for i := range spans {
			start := uint64(rng.IntN(4))
			s := usage(fmt.Sprintf("s%02d", rng.IntN(40)+i*40), "", start, start+uint64(rng.IntN(4)), uint64(100*(1+rng.IntN(2))), 10)
			if i > 0 && rng.IntN(4) == 0 {
				s.ParentID = spans[rng.IntN(i)].ID
			}
			if rng.IntN(6) == 0 {
				s.SpanType = schema.TypeTool
			}
			spans[i] = s
		}
		got := repeatedCalls(spans)
		for i, x := range spans {
			want := false
			if x.SpanType == schema.TypeInference {
				for _, y := range spans {
					if y.SpanType == schema.TypeInference && SameCall(x, y) {
						want = true
					}
				}
			}
			if got[i] != want {
				t.Fatalf("run %d: span %s repeated %v, pairwise rule says %v\n%+v", run, x.ID, got[i], want, spans)
			}
		}
	}
}

// TestRecordedCalls: of a run's usage records, as many as there are request
// spans (inference spans without usage that are not records) are not calls,
// the earliest first; a record without a request span is its own call.
func TestRecordedCalls(t *testing.T) {
	req := func(id string) UsageSpan { return UsageSpan{ID: id, SpanType: schema.TypeInference} }
	rec := func(id string) UsageSpan {
		return UsageSpan{ID: id, SpanType: schema.TypeInference, Record: true, UsageMode: schema.UsageInclusive, Input: 10}
	}
	call := UsageSpan{ID: "c", SpanType: schema.TypeInference, UsageMode: schema.UsageInclusive, Input: 5}
	tool := UsageSpan{ID: "t", SpanType: schema.TypeTool}
	for _, c := range []struct {
		name  string
		spans []UsageSpan
		want  []bool
	}{
		{"two streamed calls", []UsageSpan{req("r1"), rec("l1"), req("r2"), rec("l2")}, []bool{false, true, false, true}},
		{"a streamed call and one that is not", []UsageSpan{req("r1"), rec("l1"), call}, []bool{false, true, false}},
		{"a record without its request span", []UsageSpan{rec("l1"), tool}, []bool{false, false}},
		{"more records than requests: the earliest are paired", []UsageSpan{rec("l1"), rec("l2"), req("r1")}, []bool{true, false, false}},
		{"no records", []UsageSpan{req("r1"), call}, []bool{false, false}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := RecordedCalls(c.spans); !slices.Equal(got, c.want) {
				t.Errorf("RecordedCalls = %v, want %v", got, c.want)
			}
		})
	}
}
