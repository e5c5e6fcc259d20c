package query

import (
	"context"
	"slices"
	"sync"
	"time"
)

// A cost report over the last 30 days starts in the middle of an hour: its
// closed hours come from the rollup, but the part of its first hour after
// the range's start is read from the spans, and with the hour of spans
// around it that attribution needs (see loadSpans). At 10M spans that one
// load was most of the report's time: ~30 ms of ClickHouse and ~25 ms of
// scanning and attribution, again at every request, for an hour that no
// longer changes. The edge hour cache keeps that hour's spans, reduced to
// what a report adds up (edgeSpan), once per computation of the hour by the
// rollup: a span arriving late for the hour makes the rollup compute it
// again (within about a minute, like the rolled-up hours of the same
// report), and a new computation is a new version, which the cache does
// not hold.

// DefaultEdgeHourSpans is the most spans the edge hour cache holds when
// NewReader is not given WithEdgeHourSpans: the spans one load of the
// default --memory-budget holds (a cached span takes ~0.5 KB).
const DefaultEdgeHourSpans = 26214

// WithEdgeHourSpans bounds the spans the edge hour cache holds (an hour of
// more is read from the spans at every report, as without the cache); 0 or
// less turns the cache off.
func WithEdgeHourSpans(n int) ReaderOption { return func(r *core) { r.edges = newEdgeHours(n) } }

// edgeSpan is what a cost report adds up of one attributed span: its
// start, its values of the rollup's dimensions (dimValue's, in rollupDims
// order) and its counts, tokens and cost (CostTotals.AddSpan of the span
// alone).
type edgeSpan struct {
	startNs uint64
	dims    [len(rollupDims)]string
	totals  CostTotals
}

// rollupDims are the dimensions dimValue knows, in edgeSpan.dims order.
var rollupDims = [...]string{"agent", "model", "provider", "task", "service", "tool", "conversation_id", "user_id"}

// dim is the span's value of dimension d (dimValue's).
func (s *edgeSpan) dim(d string) string {
	if i := slices.Index(rollupDims[:], d); i >= 0 {
		return s.dims[i]
	}
	return ""
}

// edgeHour is one project's closed hour as of one computation of the rollup.
type edgeHour struct {
	project string
	hour    time.Time
	version uint64     // the rollup's computation of the hour
	spans   []edgeSpan // the spans starting in the hour
	tooMany bool       // more than the cache holds: spans nil
}

// edgeHours is the edge hour cache: the latest hour asked for, at most
// maxSpans spans. The zero maxSpans (nil cache) holds nothing.
type edgeHours struct {
	maxSpans int
	mu       sync.Mutex
	held     *edgeHour
	// filling serializes the loads, so that the requests of a dashboard
	// opened at once load the hour once.
	filling sync.Mutex
}

// newEdgeHours returns a cache of at most maxSpans spans, or nil (no
// cache) for maxSpans ≤ 0.
func newEdgeHours(maxSpans int) *edgeHours {
	if maxSpans <= 0 {
		return nil
	}
	return &edgeHours{maxSpans: maxSpans}
}

// get returns the spans of project's hour as of the rollup's computation
// version, from the cache or loaded and kept; ok is false when the cache is
// off or the hour holds more than maxSpans spans (the caller reads its
// range from the spans: the hour is loaded whole once to find that out).
func (c *edgeHours) get(ctx context.Context, project string, hour time.Time, version uint64,
	load func(ctx context.Context) ([]edgeSpan, error)) (spans []edgeSpan, ok bool, err error) {
	if c == nil {
		return nil, false, nil
	}
	if h := c.lookup(project, hour, version); h != nil {
		return h.spans, !h.tooMany, nil
	}
	c.filling.Lock()
	defer c.filling.Unlock()
	if h := c.lookup(project, hour, version); h != nil {
		return h.spans, !h.tooMany, nil
	}
	spans, err = load(ctx)
	if err != nil {
		return nil, false, err
	}
	h := &edgeHour{project: project, hour: hour, version: version, spans: spans}
	if len(spans) > c.maxSpans {
		h.spans, h.tooMany = nil, true
	}
	c.mu.Lock()
	c.held = h
	c.mu.Unlock()
	return spans, true, nil
}

// lookup is the held hour if it is project's hour at version.
func (c *edgeHours) lookup(project string, hour time.Time, version uint64) *edgeHour {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h := c.held; h != nil && h.project == project && h.hour.Equal(hour) && h.version == version {
		return h
	}
	return nil
}

// loadEdgeHour loads project's spans starting in [hour, hour+1h), attributed
// as a live range of a report is (loadSpans), reduced to edgeSpans.
func (r *core) loadEdgeHour(ctx context.Context, project string, hour time.Time) ([]edgeSpan, error) {
	spans, err := r.loadSpans(ctx, project, hour, hour.Add(time.Hour), DefaultTraceWindow)
	if err != nil {
		return nil, err
	}
	out := make([]edgeSpan, len(spans))
	for i := range spans {
		a, e := &spans[i], &out[i]
		e.startNs = a.StartNs
		for j, d := range rollupDims {
			e.dims[j] = dimValue(a, d)
		}
		e.totals.AddSpan(a)
	}
	return out, nil
}
