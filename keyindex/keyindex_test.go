package keyindex_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tallyhq/tally/internal/goldentest"
	"github.com/tallyhq/tally/internal/testenv"
	"github.com/tallyhq/tally/keyindex"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/schema"
)

// TestMain stops the ClickHouse server the package's tests share.
func TestMain(m *testing.M) { testenv.Main(m) }

// TestIndexAnswersAutocomplete: spans in two closed hours and the open
// one; once indexed (the open hour too), keys and values over the window
// count every span. A late span in an indexed hour, stamped before the
// index's computations (version 2), is not counted until the next refresh
// finds the hour's spans changed, which proves the reads use the index;
// then it is. A span that arrives after the newest computation is counted
// at once, from the spans.
func TestIndexAnswersAutocomplete(t *testing.T) {
	ctx := context.Background()
	store := goldentest.OpenStore(t)
	now := time.Now().UTC()
	open := now.Truncate(time.Hour)
	first, second := open.Add(-3*time.Hour), open.Add(-2*time.Hour)
	n := 0
	span := func(project string, at time.Time, route string) schema.Span {
		n++
		return schema.Span{Project: project, TraceID: fmt.Sprintf("%032x", n), SpanID: fmt.Sprintf("%016x", n),
			Start: at.Truncate(time.Second), StartNs: uint64(at.UnixNano()), EndNs: uint64(at.UnixNano()) + 1e6, Name: "GET",
			AttrKeys: []string{"http.route"}, AttrValues: []string{route},
			ResourceKeys: []string{"service.version"}, ResourceValues: []string{"1.2"}, IngestedAt: now}
	}
	goldentest.Insert(t, store, []schema.Span{
		span("p", first.Add(time.Minute), "/a"), span("p", first.Add(2*time.Minute), "/a"), span("p", first.Add(3*time.Minute), "/b"),
		span("p", second.Add(time.Minute), "/a"),
		span("p", open.Add(time.Second), "/c"),
		span("other", first.Add(time.Minute), "/secret"),
	}, 1)
	idx := keyindex.New(store, keyindex.Config{})
	st, err := idx.Refresh(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	// The 48 closed hours and the open one checked; on a store of its own
	// every one is new.
	if st.HoursChecked != 49 || st.HoursIndexed != 49 {
		t.Fatalf("refresh: %+v", st)
	}
	r := query.NewReader(store)
	since := first.Add(-30 * time.Minute)
	values := func(field string) []query.SearchValue {
		t.Helper()
		v, err := r.SearchValues(ctx, "p", field, since, now, query.SearchLimits{})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	want := []query.SearchValue{{Value: "/a", Spans: 3}, {Value: "/b", Spans: 1}, {Value: "/c", Spans: 1}}
	if got := values("span.http.route"); !slices.Equal(got, want) {
		t.Fatalf("values %+v, want %+v", got, want)
	}
	keys, err := r.SearchKeys(ctx, "p", since, now, query.SearchLimits{})
	if err != nil {
		t.Fatal(err)
	}
	var attrs []query.SearchKey
	for _, k := range keys {
		if k.Type == "attribute" && k.Doc == "" {
			attrs = append(attrs, k)
		}
	}
	wantKeys := []query.SearchKey{{Key: "span.http.route", Type: "attribute", Spans: 5}, {Key: "resource.service.version", Type: "attribute", Spans: 5}}
	if !slices.Equal(attrs, wantKeys) {
		t.Fatalf("keys %+v, want %+v", attrs, wantKeys)
	}

	// A late span in the first hour: the index does not have it yet.
	goldentest.Insert(t, store, []schema.Span{span("p", first.Add(4*time.Minute), "/a")}, 2)
	if got := values("span.http.route"); !slices.Equal(got, want) {
		t.Fatalf("before the refresh: values %+v, want the index's %+v", got, want)
	}
	if st, err = idx.Refresh(ctx, now); err != nil || st.HoursIndexed != 1 {
		t.Fatalf("refresh after a late span: %+v %v", st, err)
	}
	want[0].Spans = 4
	if got := values("span.http.route"); !slices.Equal(got, want) {
		t.Fatalf("after the refresh: values %+v, want %+v", got, want)
	}
	// Nothing changed: nothing to index.
	if st, err = idx.Refresh(ctx, now); err != nil || st.HoursIndexed != 0 {
		t.Fatalf("idle refresh: %+v %v", st, err)
	}
	// A span stamped now, after every computation, in the open hour: read
	// from the spans before any refresh.
	goldentest.Insert(t, store, []schema.Span{span("p", open.Add(2*time.Second), "/c")}, uint64(time.Now().UnixNano()))
	want = []query.SearchValue{{Value: "/a", Spans: 4}, {Value: "/c", Spans: 2}, {Value: "/b", Spans: 1}}
	if got := values("span.http.route"); !slices.Equal(got, want) {
		t.Fatalf("a new span: values %+v, want %+v", got, want)
	}
}

// TestIndexKeepsAnHoursTopValues: an hour keeps its 50 most frequent values
// of up to 200 bytes. In a closed hour, 51 routes once each (/v00…/v50), a
// route of 200 bytes twice and one of 201 bytes; in the open hour /v50 and
// the two long routes once more. The index keeps the closed hour's
// 200-byte route (2) and /v00…/v48, the first 49 of the ties by value, and
// drops /v49 and /v50; so the 200-byte route counts 3 and comes first,
// /v50 counts its open-hour span only and sorts after /v00…/v48 — where
// the list stops at 50. Had the hour kept every value, /v50 (2) would
// come second. The 201-byte route is never listed, from the index or from
// the spans (it would count 2).
func TestIndexKeepsAnHoursTopValues(t *testing.T) {
	ctx := context.Background()
	store := goldentest.OpenStore(t)
	now := time.Now().UTC()
	open := now.Truncate(time.Hour)
	closed := open.Add(-2 * time.Hour)
	long, tooLong := strings.Repeat("x", schema.MaxSearchKeyValueBytes), strings.Repeat("y", schema.MaxSearchKeyValueBytes+1)
	var spans []schema.Span
	add := func(at time.Time, route string) {
		n := len(spans) + 1
		spans = append(spans, schema.Span{Project: "p", TraceID: fmt.Sprintf("%032x", n), SpanID: fmt.Sprintf("%016x", n),
			Start: at.Truncate(time.Second), StartNs: uint64(at.UnixNano()), EndNs: uint64(at.UnixNano()) + 1e6, Name: "GET",
			AttrKeys: []string{"http.route"}, AttrValues: []string{route}, IngestedAt: now})
	}
	for i := range schema.MaxSearchKeyValues + 1 {
		add(closed.Add(time.Duration(i)*time.Second), fmt.Sprintf("/v%02d", i))
	}
	add(closed.Add(time.Minute), long)
	add(closed.Add(time.Minute), long)
	add(closed.Add(time.Minute), tooLong)
	add(open.Add(time.Second), fmt.Sprintf("/v%02d", schema.MaxSearchKeyValues))
	add(open.Add(time.Second), long)
	add(open.Add(time.Second), tooLong)
	goldentest.Insert(t, store, spans, 1)
	if _, err := keyindex.New(store, keyindex.Config{}).Refresh(ctx, now); err != nil {
		t.Fatal(err)
	}
	got, err := query.NewReader(store).SearchValues(ctx, "p", "span.http.route", closed, now, query.SearchLimits{})
	if err != nil {
		t.Fatal(err)
	}
	want := []query.SearchValue{{Value: long, Spans: 3}}
	for i := range schema.MaxSearchKeyValues - 1 {
		want = append(want, query.SearchValue{Value: fmt.Sprintf("/v%02d", i), Spans: 1})
	}
	if !slices.Equal(got, want) {
		t.Fatalf("values %+v\nwant %+v", got, want)
	}
}
