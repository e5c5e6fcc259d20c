package query

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tallyhq/tally/attribution"
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
// the cache, and the part of a minute its range starts in (or ends in,
// when it ends in a closed hour: the period before of compare=previous)
// from that minute's spans, which the cache keeps for the next reports
// that start in the same minute (a page of reports opened at once, or
// refreshed within the minute). A span arriving late for the hour makes
// the rollup compute it again (within about a minute, like the rolled-up
// hours of the same report), and a new computation is a new version,
// which the cache does not hold.
//
// It holds the hours last asked for (up to four: a report's first and
// last, the first of the period before it), each with the spans of at
// most two of its minutes. What it holds is bounded by one number
// (WithEdgeHourSpans): an hour is loaded in parts of its runs of at most
// that many spans (by the rollup's count of the hour's rows), and kept
// only if it adds up to at most that many entries (one view's totals of
// one minute and one value, about half the size of a loaded span), the
// hours held at most twice that many in all; a minute's spans are kept up
// to that many. An hour of more entries, or a minute of more spans, is
// read from the spans at every report, as without the cache.

// DefaultEdgeHourSpans is the bound of the edge hour cache when NewReader
// is not given WithEdgeHourSpans: the spans one load of the default
// --memory-budget holds (a loaded span takes ~0.5 KB), and as many cached
// entries.
const DefaultEdgeHourSpans = 26214

// WithEdgeHourSpans bounds the edge hour cache and the open hour cache
// (openhour.go): the spans of one load of an hour (an hour of more is
// loaded in parts of its runs) and the entries an hour keeps (an hour of
// more is read from the spans at every report, as without the caches); 0
// or less turns both caches off.
func WithEdgeHourSpans(n int) ReaderOption {
	return func(r *core) { r.edges, r.opens = newEdgeHours(n), newOpenHours(n) }
}

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

// edgeViewsOf is the index in edgeViews of each of views; ok is false
// when one is a view the hour caches do not add up.
func edgeViewsOf(views []view) (vis []int, ok bool) {
	vis = make([]int, len(views))
	for i, v := range views {
		if vis[i] = edgeViewOf(v); vis[i] < 0 {
			return nil, false
		}
	}
	return vis, true
}

// hourPart is the part [lo, hi) of a range in one hour, as the hour caches
// answer it: the parts of minutes it starts and ends in (ends: [lo,
// first) and [last, hi), one when lo and hi are in one minute, empty when
// not needed) and the whole minutes between, [m0, m1) of the hour.
type hourPart struct {
	hour, lo, hi time.Time
	ends         [2]TimeRange
	m0, m1       int
}

// partOf is lr's part in hour; ok is false when lr is outside it.
func partOf(lr TimeRange, hour time.Time) (p hourPart, ok bool) {
	p.hour, p.lo, p.hi = hour, maxTime(lr.Since, hour), minTime(lr.Until, hour.Add(time.Hour))
	if !p.lo.Before(p.hi) {
		return p, false
	}
	first, last := minTime(ceilTo(p.lo, time.Minute), p.hi), maxTime(p.hi.Truncate(time.Minute), p.lo)
	p.ends = [2]TimeRange{{p.lo, first}, {maxTime(last, first), p.hi}}
	p.m0, p.m1 = int(first.Sub(hour)/time.Minute), int(last.Sub(hour)/time.Minute)
	return p, true
}

// rest is what is left of lr outside the part, to be read live.
func (p hourPart) rest(lr TimeRange) []TimeRange {
	var rest []TimeRange
	if lr.Since.Before(p.lo) {
		rest = append(rest, TimeRange{lr.Since, p.lo})
	}
	if p.hi.Before(lr.Until) {
		rest = append(rest, TimeRange{p.hi, lr.Until})
	}
	return rest
}

// addMinutes adds the entries of minutes [m0, m1) of h, the hour starting
// at hour, to the views (vis: their indexes in edgeViews).
func (h *edgeHour) addMinutes(out []aggregation, vis []int, hour time.Time, bucket string, m0, m1 int) {
	if m0 >= m1 {
		return
	}
	for i, vi := range vis {
		for _, e := range h.minutes(vi, m0, m1) {
			b := bucketStart(hour.Add(time.Duration(e.minute)*time.Minute), bucket)
			out[i].at(bucketKey{b, e.key}).add(&e.totals)
		}
	}
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
	// spanMinutes are the spans of the minutes of the hour last asked
	// for; under edgeHours.mu.
	spanMinutes heldMinutes
}

// edgeMinute is the spans of one minute of an edge hour, reduced to what
// a report adds up.
type edgeMinute struct {
	start   time.Time
	spans   []edgeSpan
	tooMany bool // more spans than the cache holds: spans nil
}

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

// How many hours the edge hour cache holds (a report's first and last, and
// the first of the period before it with compare=previous: three), how
// many times its bound their entries come to at most, and how many minutes
// of spans it keeps with an hour.
const (
	edgeHoursHeld   = 4
	edgeHeldBounds  = 2
	edgeMinutesHeld = 2
)

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

// addSpan adds the attributed span a (in the hour).
func (s *edgeHourSum) addSpan(a *attribution.Attributed) {
	var t CostTotals
	t.AddSpan(a)
	s.add(a.StartNs, func(d string) string { return dimValue(a, d) }, &t)
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

// entries is how many entries h keeps, in all its views.
func (h *edgeHour) entries() int {
	n := 0
	for _, v := range h.views {
		n += len(v)
	}
	return n
}

// minutes is the entries of view vi in minutes [from, to) of the hour.
func (h *edgeHour) minutes(vi int, from, to int) []edgeEntry {
	e := h.views[vi]
	lo, _ := slices.BinarySearchFunc(e, from, func(x edgeEntry, m int) int { return cmp.Compare(int(x.minute), m) })
	hi, _ := slices.BinarySearchFunc(e, to, func(x edgeEntry, m int) int { return cmp.Compare(int(x.minute), m) })
	return e[lo:hi]
}

// edgeHours is the edge hour cache: the latest hours asked for
// (edgeHoursHeld). The zero bound (nil cache) holds nothing.
type edgeHours struct {
	bound int // spans a load, entries kept, spans of a minute kept
	// partSpans, when above 0, is the spans a load instead of bound (tests
	// load a small hour in parts with it).
	partSpans int
	mu        sync.Mutex
	held      []*edgeHour // the latest asked for first
	parts     int         // how many parts the latest load of an hour took
	loads     int         // the loads of hours and minutes so far
	// filling serializes the loads, so that the requests of a dashboard
	// opened at once load an hour or a minute once.
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
	defer c.mu.Unlock()
	c.parts = h.parts
	c.loads++
	c.held = slices.DeleteFunc(c.held, func(o *edgeHour) bool { return o.project == project && o.hour.Equal(hour) })
	c.held = slices.Insert(c.held, 0, h)
	total := 0
	for i, o := range c.held {
		if total += o.entries(); i > 0 && (i >= edgeHoursHeld || total > edgeHeldBounds*c.bound) {
			c.held = c.held[:i]
			break
		}
	}
	return h, !h.tooMany, nil
}

// lookup is the held hour if it is project's hour at version, made the
// latest asked for.
func (c *edgeHours) lookup(project string, hour time.Time, version uint64) *edgeHour {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, h := range c.held {
		if h.project == project && h.hour.Equal(hour) && h.version == version {
			copy(c.held[1:i+1], c.held[:i])
			c.held[0] = h
			return h
		}
	}
	return nil
}

// minute returns the spans of the minute starting at start of the held
// hour h, kept with h or loaded and kept; ok is false when the minute has
// more spans than the cache holds (the caller reads its range from the
// spans), but for the load that found that out, which answers from what
// it loaded.
func (c *edgeHours) minute(ctx context.Context, h *edgeHour, start time.Time,
	load func(ctx context.Context, from time.Time) ([]edgeSpan, error)) (spans []edgeSpan, ok bool, err error) {
	if m := c.lookupMinute(h, start); m != nil {
		return m.spans, !m.tooMany, nil
	}
	c.filling.Lock()
	defer c.filling.Unlock()
	if m := c.lookupMinute(h, start); m != nil {
		return m.spans, !m.tooMany, nil
	}
	if spans, err = load(ctx, start); err != nil {
		return nil, false, err
	}
	m := &edgeMinute{start: start, spans: spans}
	if len(spans) > c.bound {
		m.spans, m.tooMany = nil, true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.loads++
	h.spanMinutes.keep(m)
	return spans, true, nil
}

// lookupMinute is the minute starting at start kept with h, if any.
func (c *edgeHours) lookupMinute(h *edgeHour, start time.Time) *edgeMinute {
	c.mu.Lock()
	defer c.mu.Unlock()
	return h.spanMinutes.find(start)
}

// heldMinutes are the spans of the minutes of an hour last asked for
// (edgeMinutesHeld at most), the latest first: what the edge and open hour
// caches keep of the minutes a range starts or ends in.
type heldMinutes []*edgeMinute

// find is the minute starting at start, if held.
func (ms heldMinutes) find(start time.Time) *edgeMinute {
	for _, m := range ms {
		if m.start.Equal(start) {
			return m
		}
	}
	return nil
}

// keep holds m as the latest asked for, and lets the oldest go beyond
// edgeMinutesHeld.
func (ms *heldMinutes) keep(m *edgeMinute) {
	*ms = slices.Insert(*ms, 0, m)
	if len(*ms) > edgeMinutesHeld {
		*ms = (*ms)[:edgeMinutesHeld]
	}
}

// loadEdgeHour loads project's spans starting in the rolled-up hour edge,
// attributed as a live range of a report is (loadSpans), in parts of its
// runs of about partSpans spans by the rollup's count of the hour's rows,
// and adds them up by minute (tooMany once they add up to more than bound
// entries).
func (r *core) loadEdgeHour(ctx context.Context, project string, edge rolledHour, bound, partSpans int) (*edgeHour, error) {
	parts := loadParts(edge.rawRows, partSpans)
	sum := newEdgeHourSum(edge.hour)
	for i := range parts {
		spans, err := r.loadSpansShard(ctx, project, edge.hour, edge.hour.Add(time.Hour), DefaultTraceWindow, Shard{Index: i, Of: parts})
		if err != nil {
			return nil, err
		}
		for j := range spans {
			sum.addSpan(&spans[j])
		}
		if sum.entries > bound {
			return &edgeHour{tooMany: true, parts: i + 1}, nil
		}
	}
	h := &edgeHour{parts: parts}
	sum.into(h)
	return h, nil
}

// loadParts is how many parts of its runs a load of rows spans takes at
// most partSpans spans a part (one when partSpans is 0).
func loadParts(rows uint64, partSpans int) int {
	if partSpans <= 0 || rows <= uint64(partSpans) {
		return 1
	}
	return int((rows + uint64(partSpans) - 1) / uint64(partSpans))
}

// loadEdgeSpans loads project's spans starting in [from, to), attributed
// as a live range of a report is (loadSpans), reduced to edgeSpans.
func (r *core) loadEdgeSpans(ctx context.Context, project string, from, to time.Time) ([]edgeSpan, error) {
	spans, err := r.loadSpans(ctx, project, from, to, DefaultTraceWindow)
	if err != nil {
		return nil, err
	}
	out := make([]edgeSpan, len(spans))
	for i := range spans {
		out[i] = edgeSpanOf(&spans[i])
	}
	return out, nil
}

// edgeSpanOf is what a cost report adds up of the attributed span a.
func edgeSpanOf(a *attribution.Attributed) edgeSpan {
	e := edgeSpan{startNs: a.StartNs}
	for j, d := range rollupDims {
		e.dims[j] = dimValue(a, d)
	}
	e.totals.AddSpan(a)
	return e
}
