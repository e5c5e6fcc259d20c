package query

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tallyhq/tally/attribution"
	"github.com/tallyhq/tally/schema"
)

// A cost report that reaches now reads the open hour from the spans (the
// rollup computes an hour once it has closed), and the hour before it too
// until the rollup has computed it. At 100M spans an hour holds ~140k
// spans, and with 22 minutes of them in the open hour every report took
// ~0.45 s more to load and attribute them again (a costs page of eight
// reports 15–20 s). Unlike a closed hour's, the open hour's figures change
// as runs in flight end: a late retry makes an earlier call retry tax, a
// span names its run's task, so its minutes cannot be kept once computed.
//
// Its runs can: a run's spans are attributed from the run's own spans (in
// the trace window around the hour), so a run whose rows have not changed
// adds the same totals. The open hour cache keeps the hour added up by
// minute, as the edge hour cache keeps a closed one (edgeHour's views),
// over the hour's quiet runs (the base: no span accepted for openQuiet),
// with each base run's key (its rows' count and versions' sum in the
// window, as HourFingerprint is an hour's). A report first reads every
// run's key (one GROUP BY over the window's narrow columns); while every
// base run's key is unchanged it takes the base's minutes from the cache
// and loads only the other runs (in flight, or new since) from their
// spans. A base run whose key changed (a late span, a duplicate, a
// reprice, a merge collapsing duplicates), or more other runs than a load
// should hold, has the hour built again. A report is as complete and as
// fresh as one read wholly from the spans.
//
// It holds the open hour and the hour before it (openHoursHeld), each of
// at most the cache's bound entries (WithEdgeHourSpans) and with the base
// spans of at most two of its minutes (the part of a minute a range
// starts in, when base spans of that minute fall on both sides of it).

// openQuiet is how long no span of a run must have been accepted (its
// spans' highest version, the acceptance time) for the run to join the
// base of a build: a run in flight would change the key at once.
const openQuiet = 30 * time.Second

// openHoursHeld is how many hours the open hour cache holds: the open
// hour and the one before it (until the rollup computes it).
const openHoursHeld = 2

// runKey identifies the state of a run's rows in the trace window around
// an hour: their count and the sum of their versions. A new span, a
// duplicate, a reprice or a merge collapsing duplicates changes it.
type runKey struct{ rows, versions uint64 }

// openRun is what a report reads of each run with a span in the hour: its
// key, its first span's start in the window, how many of its rows start
// in the hour and when its newest row was accepted.
type openRun struct {
	key         runKey
	firstNs     uint64
	hourRows    uint64
	lastVersion uint64
}

// quiet reports whether no row of the run was accepted for openQuiet
// before now.
func (run openRun) quiet(now time.Time) bool {
	return now.Sub(time.Unix(0, int64(run.lastVersion))) >= openQuiet
}

// openHour is one project's hour not rolled up, added up over its base
// runs.
type openHour struct {
	project string
	hour    time.Time
	built   time.Time
	sums    edgeHour          // the base runs' totals by minute (views; tooMany when over the bound)
	base    map[string]runKey // the base runs' keys when the hour was built
	// firstNs and lastNs are the earliest and latest start of the base
	// spans of each minute (0: none): a part of a minute takes the
	// minute's totals whole when every base span of it falls inside.
	firstNs, lastNs [60]uint64
	// spanMinutes are the base spans of the minutes last asked for; under
	// openHours.mu.
	spanMinutes heldMinutes
}

// current reports whether every base run of h still has its key in keys.
func (h *openHour) current(keys map[string]openRun) bool {
	for id, k := range h.base {
		if run, ok := keys[id]; !ok || run.key != k {
			return false
		}
	}
	return true
}

// isBase reports whether the run id is one of h's base runs.
func (h *openHour) isBase(id string) bool {
	_, ok := h.base[id]
	return ok
}

// others is the runs of keys outside h's base, and their rows in the
// window.
func (h *openHour) others(keys map[string]openRun) (ids []string, rows uint64) {
	for id, run := range keys {
		if !h.isBase(id) {
			ids = append(ids, id)
			rows += run.key.rows
		}
	}
	slices.Sort(ids)
	return ids, rows
}

// openHours is the open hour cache. The zero bound (nil cache) holds
// nothing.
type openHours struct {
	bound int // entries an hour keeps, spans a load and a minute hold; the other runs' rows a report loads at most half of it
	now   func() time.Time
	// absorbAt, when above 0, is absorbRows instead of its share of the
	// bound (tests absorb a small hour's runs with it).
	absorbAt int
	mu       sync.Mutex
	held     []*openHour // the latest asked for first
	// builds counts the hours built, absorbs the quiet runs added to a
	// held hour's base, loads the minutes of base spans loaded; reads the
	// reports answered from a held hour.
	builds, absorbs, loads, reads int
	// filling serializes the builds, so that the reports of a page opened
	// at once build an hour once.
	filling sync.Mutex
}

// newOpenHours returns a cache bounded by bound, or nil (no cache) for
// bound ≤ 0.
func newOpenHours(bound int) *openHours {
	if bound <= 0 {
		return nil
	}
	return &openHours{bound: bound, now: time.Now}
}

// eligible reports whether a report's part in hour may come from the
// cache: the open hour or the one before it. An older hour not rolled up
// (a store the rollup has not caught up with) is read from the spans in
// ranges of hours, as before.
func (c *openHours) eligible(hour time.Time) bool {
	return c != nil && !hour.Before(c.now().Truncate(time.Hour).Add(-time.Hour))
}

// openLoads are the loads the open hour cache asks of a reader: build
// adds up the hour over base (the quiet runs of the report's keys);
// absorb adds the runs ids (quiet, outside the base) to a copy of h.
type openLoads struct {
	build  func(ctx context.Context, base map[string]runKey) (*openHour, error)
	absorb func(ctx context.Context, h *openHour, ids []string) (*openHour, error)
}

// absorbRows is how many rows of quiet runs outside the base a report
// loads from their spans before they are added to the base (absorbed):
// a sixteenth of the bound, so that a report's load of the other runs
// stays small while the hour fills.
func (c *openHours) absorbRows() uint64 {
	if c.absorbAt > 0 {
		return uint64(c.absorbAt)
	}
	return uint64(max(1, c.bound/16))
}

// get returns project's hour from the cache — built, or with the quiet
// runs outside its base absorbed, when needed — and kept, with the runs a
// report loads from their spans; ok is false when the hour cannot be
// answered so (more entries than the bound, or, just after a build, more
// other runs than a report should load): the caller reads it from the
// spans.
func (c *openHours) get(ctx context.Context, project string, hour time.Time, keys map[string]openRun, loads openLoads) (h *openHour, others []string, ok bool, err error) {
	// state says what a held hour needs: nothing (use it), absorbing its
	// quiet others, or building again; or that it cannot be used (nil
	// others and not use).
	type state struct {
		others, quiet        []string
		use, absorb, rebuild bool
	}
	check := func(h *openHour) state {
		if h == nil || !h.current(keys) {
			return state{rebuild: true}
		}
		if h.sums.tooMany {
			return state{}
		}
		others, rows := h.others(keys)
		now := c.now()
		var quiet []string
		var quietRows uint64
		for _, id := range others {
			if run := keys[id]; run.quiet(now) {
				quiet = append(quiet, id)
				quietRows += run.key.rows
			}
		}
		st := state{others: others, quiet: quiet, absorb: quietRows >= c.absorbRows() && len(quiet) <= maxLiveIDs}
		if len(others) <= maxLiveIDs && rows <= uint64(c.bound/2) {
			st.use = true
			return st
		}
		// Too many runs outside the base: absorbed or built again once
		// its quiet runs may have changed, else read from the spans.
		st.others = nil
		st.rebuild = !st.absorb && now.Sub(h.built) >= openQuiet
		return st
	}
	if h = c.lookup(project, hour); h != nil {
		if st := check(h); !st.absorb && (st.use || !st.rebuild) {
			return h, st.others, st.use, nil
		}
	}
	c.filling.Lock()
	defer c.filling.Unlock()
	h = c.lookup(project, hour)
	st := check(h)
	switch {
	case st.absorb:
		if h, err = loads.absorb(ctx, h, st.quiet); err != nil {
			return nil, nil, false, err
		}
		c.mu.Lock()
		c.absorbs++
		c.mu.Unlock()
	case st.use || !st.rebuild:
		return h, st.others, st.use, nil
	default:
		now := c.now()
		base := map[string]runKey{}
		for id, run := range keys {
			if run.quiet(now) {
				base[id] = run.key
			}
		}
		if h, err = loads.build(ctx, base); err != nil {
			return nil, nil, false, err
		}
		h.project, h.hour, h.built, h.base = project, hour, now, base
		c.mu.Lock()
		c.builds++
		c.mu.Unlock()
	}
	c.mu.Lock()
	c.held = slices.DeleteFunc(c.held, func(o *openHour) bool { return o.project == project && o.hour.Equal(hour) })
	c.held = slices.Insert(c.held, 0, h)
	if len(c.held) > openHoursHeld {
		c.held = c.held[:openHoursHeld]
	}
	c.mu.Unlock()
	st = check(h)
	return h, st.others, st.use, nil
}

// lookup is the held hour of project, made the latest asked for.
func (c *openHours) lookup(project string, hour time.Time) *openHour {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, h := range c.held {
		if h.project == project && h.hour.Equal(hour) {
			copy(c.held[1:i+1], c.held[:i])
			c.held[0] = h
			return h
		}
	}
	return nil
}

// minute returns the base spans of the minute starting at start of the
// held hour h, kept with h or loaded (load returns the minute's spans
// with their runs) and kept; ok is false when the minute has more spans
// than the cache holds.
func (c *openHours) minute(ctx context.Context, h *openHour, start time.Time,
	load func(ctx context.Context, from time.Time) ([]attribution.Attributed, error)) (spans []edgeSpan, ok bool, err error) {
	if m := c.lookupMinute(h, start); m != nil {
		return m.spans, !m.tooMany, nil
	}
	c.filling.Lock()
	defer c.filling.Unlock()
	if m := c.lookupMinute(h, start); m != nil {
		return m.spans, !m.tooMany, nil
	}
	all, err := load(ctx, start)
	if err != nil {
		return nil, false, err
	}
	m := &edgeMinute{start: start}
	for i := range all {
		if a := &all[i]; h.isBase(a.TraceID) {
			m.spans = append(m.spans, edgeSpanOf(a))
		}
	}
	if len(m.spans) > c.bound {
		m.spans, m.tooMany = nil, true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.loads++
	h.spanMinutes.keep(m)
	return m.spans, !m.tooMany, nil
}

// lookupMinute is the minute starting at start kept with h, if any.
func (c *openHours) lookupMinute(h *openHour, start time.Time) *edgeMinute {
	c.mu.Lock()
	defer c.mu.Unlock()
	return h.spanMinutes.find(start)
}

// aggregateOpen adds the part of lr in hour (not rolled up: the open hour
// or the one before it) to the views from the open hour cache: the base
// runs' whole minutes from the hour's sums, the part of a minute lr
// starts or ends in from the sums when every base span of the minute is
// on one side of it, else from the minute's base spans; and the other
// runs from their spans. It returns the rest of lr, to be read live: lr
// whole when the cache cannot answer (off, an older hour, a view it does
// not add up, too many entries or other runs).
func (r *core) aggregateOpen(ctx context.Context, project string, hour time.Time, lr TimeRange, bucket string, views []view,
	out []aggregation) ([]TimeRange, error) {
	p, in := partOf(lr, hour)
	vis, ok := edgeViewsOf(views)
	if !in || !ok || !r.opens.eligible(hour) {
		return []TimeRange{lr}, nil
	}
	if h := r.opens.lookup(project, hour); h != nil && h.sums.tooMany {
		// An hour of more entries than the cache holds is read from the
		// spans: its runs' keys are not read either.
		return []TimeRange{lr}, nil
	}
	keys, err := r.openRunKeys(ctx, project, hour)
	if err != nil {
		return nil, err
	}
	h, others, ok, err := r.opens.get(ctx, project, hour, keys, openLoads{
		build: func(ctx context.Context, base map[string]runKey) (*openHour, error) {
			return r.buildOpenHour(ctx, project, hour, keys, base)
		},
		absorb: func(ctx context.Context, h *openHour, ids []string) (*openHour, error) {
			return r.absorbOpenRuns(ctx, h, ids, keys)
		},
	})
	if err != nil || !ok {
		return []TimeRange{lr}, err
	}
	// The base's part of each minute at the ends: the minute whole when
	// all its base spans are in the part, nothing when none is, else from
	// the minute's base spans.
	var whole [2]bool
	var spans [2][]edgeSpan
	for i, end := range p.ends {
		if !end.Since.Before(end.Until) {
			continue
		}
		m := int(end.Since.Sub(hour) / time.Minute)
		from, to := uint64(end.Since.UnixNano()), uint64(end.Until.UnixNano())
		switch f, l := h.firstNs[m], h.lastNs[m]; {
		case f == 0 || l < from || f >= to:
			// no base span of the minute in the part
		case f >= from && l < to:
			whole[i] = true
		default:
			var ok bool
			spans[i], ok, err = r.opens.minute(ctx, h, end.Since.Truncate(time.Minute), func(ctx context.Context, from time.Time) ([]attribution.Attributed, error) {
				return r.loadSpans(ctx, project, from, from.Add(time.Minute), DefaultTraceWindow)
			})
			if err != nil || !ok {
				return []TimeRange{lr}, err
			}
		}
	}
	live, err := r.loadOpenRuns(ctx, project, hour, others, keys, p.lo, p.hi)
	if err != nil {
		return nil, err
	}
	for i, end := range p.ends {
		if whole[i] {
			m := int(end.Since.Sub(hour) / time.Minute)
			h.sums.addMinutes(out, vis, hour, bucket, m, m+1)
			continue
		}
		addSpansIn(out, views, bucket, spans[i], end)
	}
	h.sums.addMinutes(out, vis, hour, bucket, p.m0, p.m1)
	for i := range live {
		addAttributed(out, views, bucket, &live[i])
	}
	r.opens.mu.Lock()
	r.opens.reads++
	r.opens.mu.Unlock()
	return p.rest(lr), nil
}

// buildOpenHour loads project's spans starting in hour, attributed as a
// live range of a report is (loadSpans), in parts of its runs of about
// the cache's bound spans, and adds up the base runs' spans by minute
// (tooMany once they add up to more entries than the bound).
func (r *core) buildOpenHour(ctx context.Context, project string, hour time.Time, keys map[string]openRun, base map[string]runKey) (*openHour, error) {
	bound := r.opens.bound
	var hourRows uint64
	for _, run := range keys {
		hourRows += run.hourRows
	}
	parts := loadParts(hourRows, bound)
	h := &openHour{}
	sum := newEdgeHourSum(hour)
	for i := range parts {
		spans, err := r.loadSpansShard(ctx, project, hour, hour.Add(time.Hour), DefaultTraceWindow, Shard{Index: i, Of: parts})
		if err != nil {
			return nil, err
		}
		for j := range spans {
			if _, ok := base[spans[j].TraceID]; ok {
				h.add(sum, &spans[j])
			}
		}
		if sum.entries > bound {
			h.sums.tooMany = true
			return h, nil
		}
	}
	sum.into(&h.sums)
	return h, nil
}

// add adds the attributed span a of a base run to sum and to the
// earliest and latest start of its minute.
func (h *openHour) add(sum *edgeHourSum, a *attribution.Attributed) {
	sum.addSpan(a)
	m := (a.StartNs - sum.hourNs) / uint64(time.Minute)
	if h.firstNs[m] == 0 || a.StartNs < h.firstNs[m] {
		h.firstNs[m] = a.StartNs
	}
	h.lastNs[m] = max(h.lastNs[m], a.StartNs)
}

// absorbOpenRuns returns a copy of h with the runs ids (of keys, outside
// its base) added to its base: their spans in the hour loaded, attributed
// and added to the copy's sums. The minutes of base spans h kept are not
// carried over (they lack the new runs' spans).
func (r *core) absorbOpenRuns(ctx context.Context, h *openHour, ids []string, keys map[string]openRun) (*openHour, error) {
	spans, err := r.loadOpenRuns(ctx, h.project, h.hour, ids, keys, h.hour, h.hour.Add(time.Hour))
	if err != nil {
		return nil, err
	}
	n := &openHour{project: h.project, hour: h.hour, built: h.built, firstNs: h.firstNs, lastNs: h.lastNs}
	n.base = make(map[string]runKey, len(h.base)+len(ids))
	maps.Copy(n.base, h.base)
	for _, id := range ids {
		n.base[id] = keys[id].key
	}
	sum := newEdgeHourSum(h.hour)
	for i := range spans {
		n.add(sum, &spans[i])
	}
	var added edgeHour
	sum.into(&added)
	for vi := range n.sums.views {
		n.sums.views[vi] = mergeEntries(h.sums.views[vi], added.views[vi])
	}
	n.sums.tooMany = n.sums.entries() > r.opens.bound
	if n.sums.tooMany {
		n.sums.views = [len(edgeViews)][]edgeEntry{}
	}
	return n, nil
}

// mergeEntries merges two views' entries, each sorted by minute, then key,
// into a new sorted list, adding up the entries of one minute and key.
func mergeEntries(a, b []edgeEntry) []edgeEntry {
	out := make([]edgeEntry, 0, len(a)+len(b))
	for len(a) > 0 || len(b) > 0 {
		var c int
		switch {
		case len(a) == 0:
			c = 1
		case len(b) == 0:
			c = -1
		default:
			c = cmp.Or(cmp.Compare(a[0].minute, b[0].minute), strings.Compare(a[0].key, b[0].key))
		}
		switch {
		case c < 0:
			out, a = append(out, a[0]), a[1:]
		case c > 0:
			out, b = append(out, b[0]), b[1:]
		default:
			e := a[0]
			e.totals.add(&b[0].totals)
			out, a, b = append(out, e), a[1:], b[1:]
		}
	}
	return out
}

// openRunKeys reads the key of each of project's runs with a span starting
// in hour, over the rows a load of the hour reads (loadSpans: the trace
// window around it).
func (r *core) openRunKeys(ctx context.Context, project string, hour time.Time) (map[string]openRun, error) {
	q, args := openRunKeysSQL(r.store, project, hour)
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read the runs of the hour %s: %w", hour.Format(time.RFC3339), err)
	}
	defer rows.Close()
	out := map[string]openRun{}
	for rows.Next() {
		var id string
		var run openRun
		if err := rows.Scan(&id, &run.key.rows, &run.key.versions, &run.lastVersion, &run.firstNs, &run.hourRows); err != nil {
			return nil, fmt.Errorf("read the runs of the hour %s: %w", hour.Format(time.RFC3339), err)
		}
		out[id] = run
	}
	return out, rows.Err()
}

// openRunKeysSQL builds openRunKeys' statement.
func openRunKeysSQL(t tables, project string, hour time.Time) (string, []any) {
	from, to := hour.UTC(), hour.UTC().Add(time.Hour)
	inHour := "start_ns >= ? AND start_ns < ?"
	return "SELECT trace_id, count(), sum(version), max(version), min(start_ns), countIf(" + inHour + ") AS in_hour FROM " +
			t.Table(schema.TableSpanFacts) + "\nWHERE project = ? AND start >= ? AND start <= ?\nGROUP BY trace_id HAVING in_hour > 0",
		[]any{uint64(from.UnixNano()), uint64(to.UnixNano()), project, from.Add(-DefaultTraceWindow), to.Add(DefaultTraceWindow)}
}

// loadOpenRuns loads the spans of project's runs ids (of keys) in the
// trace window around hour, attributes them, and returns those starting
// in [lo, hi).
func (r *core) loadOpenRuns(ctx context.Context, project string, hour time.Time, ids []string, keys map[string]openRun, lo, hi time.Time) ([]attribution.Attributed, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	from, to := hour.UTC().Add(-DefaultTraceWindow), hour.UTC().Add(time.Hour+DefaultTraceWindow)
	first := uint64(to.UnixNano())
	for _, id := range ids {
		first = min(first, keys[id].firstNs)
	}
	// The runs' rows start at their first span's, in the window: the read
	// starts at the second of the earliest (runs in flight started
	// minutes ago, not an hour).
	from = maxTime(from, time.Unix(0, int64(first)).UTC().Truncate(time.Second))
	q, args := loadOpenRunsSQL(r.store, project, ids, from, to)
	return r.attributeFacts(ctx, q, args, lo, hi)
}

// loadOpenRunsSQL builds loadOpenRuns' statement: the rows of project's
// runs ids starting in [from, to] (seconds).
func loadOpenRunsSQL(t tables, project string, ids []string, from, to time.Time) (string, []any) {
	return "SELECT " + factColumns + "\nFROM " + t.Table(schema.TableSpanFacts) +
		"\nWHERE project = ? AND start >= ? AND start <= ? AND trace_id IN ?", []any{project, from, to, traceSet(ids)}
}

// aggregateOpenHours adds the parts of ranges in the hours the open hour
// cache answers for (aggregateOpen: the open hour and the one before it)
// to the views, and returns the rest of ranges, to be read live.
func (r *core) aggregateOpenHours(ctx context.Context, project string, ranges []TimeRange, bucket string, views []view,
	out []aggregation) ([]TimeRange, error) {
	if r.opens == nil {
		return ranges, nil
	}
	open := r.opens.now().Truncate(time.Hour)
	for _, hour := range []time.Time{open.Add(-time.Hour), open} {
		var err error
		ranges, err = narrowed(ranges, func(lr TimeRange) ([]TimeRange, error) {
			return r.aggregateOpen(ctx, project, hour, lr, bucket, views, out)
		})
		if err != nil {
			return nil, err
		}
	}
	return ranges, nil
}
