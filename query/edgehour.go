package query

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"time"
)

// A cost report over the last 30 days starts in the middle of an hour: its
// closed hours come from the rollup, but the part of its first hour after
// the range's start is read from the spans, and with the hour of spans
// around it that attribution needs (see loadSpans). At 10M spans that one
// load was most of the report's time: ~30 ms of ClickHouse and ~25 ms of
// scanning and attribution, again at every request, for an hour that no
// longer changes; at 100M spans (140k spans an hour) ~0.5 s.
//
// The edge hour cache keeps that hour added up by minute: for every view a
// report can ask for (edgeViews), the totals of each minute of the hour by
// the view's dimension values, once per computation of the hour by the
// rollup. A report takes the whole minutes of its range in the hour from
// the cache, and reads from the spans only the part of a minute its range
// starts in (and ends in, when it ends in the hour): a minute of spans,
// whatever the hour holds. A span arriving late for the hour makes the
// rollup compute it again (within about a minute, like the rolled-up
// hours of the same report), and a new computation is a new version,
// which the cache does not hold.
//
// What it holds is bounded twice by one number (WithEdgeHourSpans): the
// hour is loaded in parts of its runs of at most that many spans (by the
// rollup's count of the hour's rows), and kept only if it adds up to at
// most that many entries (one view's totals of one minute and one value,
// about the size of a loaded span). An hour of more entries is read from
// the spans at every report, as without the cache.

// DefaultEdgeHourSpans is the bound of the edge hour cache when NewReader
// is not given WithEdgeHourSpans: the spans one load of the default
// --memory-budget holds (a loaded span takes ~0.5 KB), and as many cached
// entries.
const DefaultEdgeHourSpans = 26214

// WithEdgeHourSpans bounds the edge hour cache: the spans of one load of
// the hour (an hour of more is loaded in parts of its runs) and the
// entries it keeps (an hour of more is read from the spans at every
// report, as without the cache); 0 or less turns the cache off.
func WithEdgeHourSpans(n int) ReaderOption { return func(r *core) { r.edges = newEdgeHours(n) } }

// edgeViews are the dimensions of the views the cache adds up: one per
// CostFilter.By (byDimension) and the unmatched models' (unmatchedView).
// A view of other dimensions is read from the spans.
var edgeViews = [...][]string{
	{"agent"}, {"model"}, {"provider"}, {"task"}, {"service"}, {"tool"}, {"conversation_id"}, {"user_id"},
	{"provider", "model"},
}

// edgeViewOf is the index in edgeViews of v's dimensions, or -1.
func edgeViewOf(v view) int {
	for i, dims := range edgeViews {
		if slices.Equal(dims, v.dims) {
			return i
		}
	}
	return -1
}

// edgeEntry is one view's totals of the spans starting in one minute of
// the hour that share the view's dimension values (key, joined as an
// aggregation's keys are).
type edgeEntry struct {
	minute uint8 // 0–59
	key    string
	totals CostTotals
}

// edgeHour is one project's closed hour as of one computation of the
// rollup.
type edgeHour struct {
	project string
	hour    time.Time
	version uint64 // the rollup's computation of the hour
	// views holds, in edgeViews order, each view's entries by minute, then
	// key.
	views   [len(edgeViews)][]edgeEntry
	tooMany bool // more entries than the cache holds: views empty
	parts   int  // the loads of spans that filled it
}

// edgeHourSum adds up an hour's attributed spans into edgeEntries.
type edgeHourSum struct {
	hourNs  uint64
	acc     [len(edgeViews)]map[edgeKey]*CostTotals
	entries int
}

type edgeKey struct {
	minute uint8
	key    string
}

func newEdgeHourSum(hour time.Time) *edgeHourSum {
	s := &edgeHourSum{hourNs: uint64(hour.UnixNano())}
	for i := range s.acc {
		s.acc[i] = map[edgeKey]*CostTotals{}
	}
	return s
}

// add adds one span starting at startNs (in the hour), whose value of
// each dimension is dim's and whose totals are t.
func (s *edgeHourSum) add(startNs uint64, dim func(string) string, t *CostTotals) {
	minute := uint8((startNs - s.hourNs) / uint64(time.Minute))
	var vals [2]string
	for vi, dims := range edgeViews {
		for di, d := range dims {
			vals[di] = dim(d)
		}
		k := edgeKey{minute, strings.Join(vals[:len(dims)], "\x00")}
		acc := s.acc[vi][k]
		if acc == nil {
			acc = &CostTotals{}
			s.acc[vi][k] = acc
			s.entries++
		}
		acc.add(t)
	}
}

// into moves the sums into h's views, each sorted by minute, then key.
func (s *edgeHourSum) into(h *edgeHour) {
	for vi, acc := range s.acc {
		entries := make([]edgeEntry, 0, len(acc))
		for k, t := range acc {
			entries = append(entries, edgeEntry{minute: k.minute, key: k.key, totals: *t})
		}
		slices.SortFunc(entries, func(a, b edgeEntry) int {
			return cmp.Or(cmp.Compare(a.minute, b.minute), strings.Compare(a.key, b.key))
		})
		h.views[vi] = entries
	}
}

// minutes is the entries of view vi in minutes [from, to) of the hour.
func (h *edgeHour) minutes(vi int, from, to int) []edgeEntry {
	e := h.views[vi]
	lo, _ := slices.BinarySearchFunc(e, from, func(x edgeEntry, m int) int { return cmp.Compare(int(x.minute), m) })
	hi, _ := slices.BinarySearchFunc(e, to, func(x edgeEntry, m int) int { return cmp.Compare(int(x.minute), m) })
	return e[lo:hi]
}

// edgeHours is the edge hour cache: the latest hour asked for. The zero
// bound (nil cache) holds nothing.
type edgeHours struct {
	bound int // spans a load, entries kept
	// partSpans, when above 0, is the spans a load instead of bound (tests
	// load a small hour in parts with it).
	partSpans int
	// parts is how many parts the latest load of an hour took.
	parts int
	mu    sync.Mutex
	held  *edgeHour
	// filling serializes the loads, so that the requests of a dashboard
	// opened at once load the hour once.
	filling sync.Mutex
}

// newEdgeHours returns a cache bounded by bound (spans a load, entries
// kept), or nil (no cache) for bound ≤ 0.
func newEdgeHours(bound int) *edgeHours {
	if bound <= 0 {
		return nil
	}
	return &edgeHours{bound: bound}
}

// get returns project's hour as of the rollup's computation version, from
// the cache or loaded (load is given the cache's bound) and kept; ok is
// false when the cache is off or the hour adds up to more entries than it
// holds (the caller reads its range from the spans).
func (c *edgeHours) get(ctx context.Context, project string, hour time.Time, version uint64,
	load func(ctx context.Context, bound, partSpans int) (*edgeHour, error)) (h *edgeHour, ok bool, err error) {
	if c == nil {
		return nil, false, nil
	}
	if h := c.lookup(project, hour, version); h != nil {
		return h, !h.tooMany, nil
	}
	c.filling.Lock()
	defer c.filling.Unlock()
	if h := c.lookup(project, hour, version); h != nil {
		return h, !h.tooMany, nil
	}
	if h, err = load(ctx, c.bound, cmp.Or(c.partSpans, c.bound)); err != nil {
		return nil, false, err
	}
	h.project, h.hour, h.version = project, hour, version
	c.mu.Lock()
	c.held, c.parts = h, h.parts
	c.mu.Unlock()
	return h, !h.tooMany, nil
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

// loadEdgeHour loads project's spans starting in the rolled-up hour edge,
// attributed as a live range of a report is (loadSpans), in parts of its
// runs of about partSpans spans by the rollup's count of the hour's rows,
// and adds them up by minute (tooMany once they add up to more than bound
// entries).
func (r *core) loadEdgeHour(ctx context.Context, project string, edge rolledHour, bound, partSpans int) (*edgeHour, error) {
	parts := 1
	if partSpans > 0 && edge.rawRows > uint64(partSpans) {
		parts = int((edge.rawRows + uint64(partSpans) - 1) / uint64(partSpans))
	}
	sum := newEdgeHourSum(edge.hour)
	for i := range parts {
		spans, err := r.loadSpansShard(ctx, project, edge.hour, edge.hour.Add(time.Hour), DefaultTraceWindow, Shard{Index: i, Of: parts})
		if err != nil {
			return nil, err
		}
		for j := range spans {
			a := &spans[j]
			var t CostTotals
			t.AddSpan(a)
			sum.add(a.StartNs, func(d string) string { return dimValue(a, d) }, &t)
		}
		if sum.entries > bound {
			return &edgeHour{tooMany: true, parts: i + 1}, nil
		}
	}
	h := &edgeHour{parts: parts}
	sum.into(h)
	return h, nil
}

// ceilMinute is t rounded up to a whole minute.
func ceilMinute(t time.Time) time.Time {
	m := t.Truncate(time.Minute)
	if m.Before(t) {
		m = m.Add(time.Minute)
	}
	return m
}
