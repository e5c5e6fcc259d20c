package query_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/schema"
)

// TestSearchColumnAttributesAsSent: an attribute ingest moved into a
// column answers to the key the span sent, and to no other key of its
// alias chain. Each run is one span holding request_model "m1":
//
//	sent-genai   sent gen_ai.request.model (column_keys say so)
//	sent-vercel  sent ai.model.id (the Vercel AI SDK's key)
//	both         sent both: gen_ai.request.model won the chain, ai.model.id
//	             "m2" stayed an attribute
//	old          stored before tally recorded column keys: either key
//	             reads the column
func TestSearchColumnAttributesAsSent(t *testing.T) {
	store := openStore(t)
	base := time.Now().Add(-time.Hour).Truncate(time.Second).UTC()
	var spans []schema.Span
	for i, s := range []struct {
		name             string
		columnKeys       []string
		attrKeys, values []string
	}{
		{"sent-genai", []string{"gen_ai.request.model"}, nil, nil},
		{"sent-vercel", []string{"ai.model.id"}, nil, nil},
		{"both", []string{"gen_ai.request.model"}, []string{"ai.model.id"}, []string{"m2"}},
		{"old", []string{schema.ColumnKeysUnknown}, nil, nil},
	} {
		start := base.Add(time.Duration(i) * time.Minute)
		spans = append(spans, schema.Span{Project: "p", TraceID: fmt.Sprintf("%032x", i+1), SpanID: fmt.Sprintf("%016x", i+1),
			Start: start, StartNs: uint64(start.UnixNano()), EndNs: uint64(start.UnixNano()) + 1e9, DurationNs: 1e9,
			Name: s.name, SpanType: schema.TypeInference, Operation: "chat", RequestModel: "m1", Model: "m1",
			ColumnKeys: s.columnKeys, AttrKeys: s.attrKeys, AttrValues: s.values, IngestedAt: start})
	}
	insert(t, store, spans, 1)
	r := query.NewReader(store)
	for _, tc := range []struct {
		q    string
		want []string // newest first
	}{
		{`{ span.gen_ai.request.model = "m1" }`, []string{"old", "both", "sent-genai"}},
		{`{ span.ai.model.id = "m1" }`, []string{"old", "sent-vercel"}},
		{`{ span.ai.model.id = "m2" }`, []string{"both"}},
		{`{ span.gen_ai.request.model = nil }`, []string{"sent-vercel"}},
		{`{ .ai.model.id != nil }`, []string{"old", "both", "sent-vercel"}},
		// The intrinsic reads the column whatever the key.
		{`{ model = "m1" }`, []string{"old", "both", "sent-vercel", "sent-genai"}},
	} {
		page, err := r.Search(context.Background(), query.SearchRequest{Project: "p", Query: tc.q,
			Since: base.Add(-time.Minute), Until: base.Add(time.Hour)})
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
	}
}
