package query

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tallyhq/tally/query/traceql"
)

// MetricsAnswer is the search API's answer to a metrics query.
type MetricsAnswer struct {
	Kind string `json:"kind"` // "metrics"
	MetricsResult
}

// MetricsResult is a metrics query's answer: one series per label set,
// each a value per step and one over the whole window (the table's
// figure).
type MetricsResult struct {
	Fn string `json:"fn"`
	// Unit is what the values count: "spans/s" (rate), "spans" (count),
	// "s" (durations, in seconds), "USD" (cost), "tokens", or "" for an
	// attribute's own unit.
	Unit  string    `json:"unit"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// StepSeconds is the width of a point's interval: a point at T
	// covers [T, T + step), T a multiple of the step since the Unix epoch
	// (so that the steps of two requests line up; the first and last may
	// reach past the window, counting only its spans).
	StepSeconds float64  `json:"step_seconds"`
	Series      []Series `json:"series"`
	// Truncated is true when more series matched than MaxSeries: those
	// with the largest whole-window values are kept.
	Truncated bool `json:"truncated,omitempty"`
	// Exact is false when the answer was evaluated over the candidate
	// runs and stopped at the examined-runs limit (Examined runs read).
	Partial  bool `json:"partial,omitempty"`
	Examined int  `json:"examined,omitempty"`
	// SQL says whether the query was answered in ClickHouse as a whole
	// (true) or evaluated in Go over candidate runs (structural
	// operators, run-level fields, pipelines before the function).
	InSQL bool `json:"in_sql"`
	// SQL is the statement read (the per-step one, or the candidate read
	// for a query evaluated in Go), when asked for.
	SQL *CompiledSQL `json:"sql,omitempty"`
}

// Series is one label set's values.
type Series struct {
	// Labels are the by() fields' values by their query spelling (a
	// field the spans lacked is absent); quantile_over_time adds "p".
	Labels map[string]string `json:"labels"`
	// Points are the value of each step with spans, in time order.
	Points []Point `json:"points"`
	// Total is the value over the whole window.
	Total float64 `json:"total"`
}

// Point is one step's value.
type Point struct {
	T time.Time `json:"t"`
	V float64   `json:"v"`
}

// MaxMetricsPoints is how many steps a metrics query may have: a step
// shorter than the window / MaxMetricsPoints is widened to it.
const MaxMetricsPoints = 1000

// DefaultMaxSeries is how many series a metrics answer holds unless
// SearchLimits.MaxSeries says otherwise.
const DefaultMaxSeries = 500

// metricsStep is the step of a window: the one asked for, else about 60
// points, never more than MaxMetricsPoints; a whole number of seconds.
func metricsStep(since, until time.Time, asked time.Duration) time.Duration {
	window := until.Sub(since)
	step := asked
	if step <= 0 {
		step = window / 60
	}
	step = max(step, window/MaxMetricsPoints, time.Second)
	return step.Round(time.Second)
}

// metricsUnit is the unit of a metrics function's values.
func metricsUnit(m *traceql.Metrics) string {
	switch m.Fn {
	case "rate":
		return "spans/s"
	case "count_over_time":
		return "spans"
	}
	switch f := m.Arg.(type) {
	case *traceql.Intrinsic:
		switch {
		case f.Def.Type == traceql.TDuration:
			return "s"
		case f.Name == "cost":
			return "USD"
		case strings.Contains(f.Name, "tokens"):
			return "tokens"
		}
	}
	return ""
}

// metricsSimple reports whether the query can be answered in SQL as a
// whole: one filter of conditions SQL decides (not run-level fields, not
// the span fields computed in Go, whose SQL only narrows), no stage
// before the function, span-level labels.
func metricsSimple(p *traceql.Plan) bool {
	_, oneFilter := p.Query.Spans.(*traceql.Filter)
	return oneFilter && len(p.Query.Stages) == 0 && !readsRunLevel(p) && !planReads(p, goSpanLevel)
}

// metricsAcc accumulates one series' values, per step and whole.
type metricsAcc struct {
	labels map[string]string
	steps  map[int64]*metricsCell
	total  metricsCell
}

// metricsCell is the figures of one step (or the window) of a series.
type metricsCell struct {
	n      float64
	sum    float64
	lo, hi float64
	values []float64 // for quantiles
	qs     []float64 // quantiles computed in SQL, per Quantiles
}

func (c *metricsCell) add(x float64, keep bool) {
	if c.n == 0 || x < c.lo {
		c.lo = x
	}
	if c.n == 0 || x > c.hi {
		c.hi = x
	}
	c.n++
	c.sum += x
	if keep {
		c.values = append(c.values, x)
	}
}

// value is the cell's figure under the function (for quantile q, the
// i-th of Quantiles); step is the interval's seconds.
func (c *metricsCell) value(m *traceql.Metrics, qi int, seconds float64) float64 {
	switch m.Fn {
	case "rate":
		return c.n / seconds
	case "count_over_time":
		return c.n
	case "sum_over_time":
		return c.sum
	case "avg_over_time":
		return c.sum / c.n
	case "min_over_time":
		return c.lo
	case "max_over_time":
		return c.hi
	case "quantile_over_time":
		if c.qs != nil {
			return c.qs[qi]
		}
		return quantileExact(c.values, m.Quantiles[qi])
	}
	return math.NaN()
}

// quantileExact is ClickHouse's quantileExact: the sorted values' element
// at index ⌊q·n⌋ (the last for q = 1), so that the Go and SQL paths agree.
func quantileExact(values []float64, q float64) float64 {
	if len(values) == 0 {
		return math.NaN()
	}
	s := slices.Clone(values)
	slices.Sort(s)
	return s[min(int(q*float64(len(s))), len(s)-1)]
}

// metricsScale converts a value as read (nanoseconds for durations) to
// the answer's unit.
func metricsScale(m *traceql.Metrics) float64 {
	if in, ok := m.Arg.(*traceql.Intrinsic); ok && in.Def.Type == traceql.TDuration {
		return 1e-9
	}
	return 1
}

// SearchMetrics answers a metrics query over the window with the given step
// (0: about 60 points).
func (r SearchReader) SearchMetrics(ctx context.Context, req SearchRequest, step time.Duration) (MetricsResult, error) {
	lim := req.Limits.withDefaults()
	q, err := traceql.Parse(req.Query, lim.Query)
	if err != nil {
		return MetricsResult{}, err
	}
	if q.Metrics == nil {
		return MetricsResult{}, &traceql.Error{Pos: len(req.Query), Msg: "not a metrics query: end it with a metrics function, as in | rate() or | quantile_over_time(duration, .95) by (tool)"}
	}
	if err := checkSearchWindow(req.Since, req.Until, lim); err != nil {
		return MetricsResult{}, err
	}
	plan := traceql.NewPlan(q)
	c, err := compileSearch(r.target(), plan, req.Project, req.Since, req.Until)
	if err != nil {
		return MetricsResult{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, lim.MaxExecution+5*time.Second)
	defer cancel()
	ctx = searchSettings(ctx, lim)
	st := metricsStep(req.Since, req.Until, step)
	res := MetricsResult{Fn: q.Metrics.Fn, Unit: metricsUnit(q.Metrics), Start: req.Since.UTC(), End: req.Until.UTC(),
		StepSeconds: st.Seconds()}
	if req.WithSQL {
		if metricsSimple(plan) {
			res.SQL = compiled(metricsSQL(r.store, dedupFor(r.store.Capabilities(), req.Since, req.Until), plan, c, req.Project, req.Since, req.Until, st, false))
		} else {
			res.SQL = compiled(searchCandidatesSQL(r.store, dedupFor(r.store.Capabilities(), req.Since, req.Until), c, req.Project, req.Since, req.Until, nil, 1000))
		}
	}
	var accs map[string]*metricsAcc
	if metricsSimple(plan) {
		res.InSQL = true
		accs, err = r.metricsInSQL(ctx, plan, c, req, st)
	} else {
		accs, res.Examined, res.Partial, err = r.metricsInGo(ctx, plan, c, req, st, lim)
	}
	if err != nil {
		return MetricsResult{}, err
	}
	res.Series, res.Truncated = metricsSeries(q.Metrics, accs, req.Since, req.Until, st, lim.MaxSeries)
	return res, nil
}

// labelsKey is a series' key: its labels in the by() order.
func labelsKey(labels []traceql.Value) string {
	var b []byte
	for _, v := range labels {
		b = strconv.AppendBool(b, v.Present)
		b = strconv.AppendQuote(b, v.Text())
	}
	return string(b)
}

func labelsMap(m *traceql.Metrics, values []traceql.Value) map[string]string {
	out := map[string]string{}
	for i, e := range m.By {
		if values[i].Present {
			out[traceql.FieldName(e)] = values[i].Text()
		}
	}
	return out
}

// metricsInGo evaluates the query over the window's candidate runs, as
// Search does, and accumulates the matched spans.
func (r SearchReader) metricsInGo(ctx context.Context, plan *traceql.Plan, c searchPlanSQL, req SearchRequest, step time.Duration, lim SearchLimits) (map[string]*metricsAcc, int, bool, error) {
	m := plan.Query.Metrics
	accs := map[string]*metricsAcc{}
	keep := m.Fn == "quantile_over_time"
	add := func(s *traceql.Span) {
		labels := make([]traceql.Value, len(m.By))
		for li, e := range m.By {
			labels[li] = s.Values[plan.FieldIndex(e)]
		}
		x := 1.0
		if m.Arg != nil {
			v := s.Values[plan.FieldIndex(m.Arg)]
			if !v.Present || !v.IsNum {
				return
			}
			x = v.Num * metricsScale(m)
		}
		key := labelsKey(labels)
		acc := accs[key]
		if acc == nil {
			acc = &metricsAcc{labels: labelsMap(m, labels), steps: map[int64]*metricsCell{}}
			accs[key] = acc
		}
		b := int64(s.Start) / int64(step)
		cell := acc.steps[b]
		if cell == nil {
			cell = &metricsCell{}
			acc.steps[b] = cell
		}
		cell.add(x, keep)
		acc.total.add(x, keep)
	}
	examined, _, partial, err := r.evalCandidates(ctx, plan, c, req, nil, 1000, lim.MaxExamined,
		func(cd *searchCandidate, res []traceql.Result, _ runLevelFacts) bool {
			seen := map[int]bool{}
			for _, rs := range res {
				for _, si := range rs.Spans {
					if !seen[si] {
						seen[si] = true
						add(&cd.spans[si])
					}
				}
			}
			return true
		})
	if err != nil {
		return nil, 0, false, err
	}
	return accs, examined, partial, nil
}

// metricsInSQL answers a one-filter query in ClickHouse: the figures per
// step and label set, then over the window per label set.
func (r SearchReader) metricsInSQL(ctx context.Context, plan *traceql.Plan, c searchPlanSQL, req SearchRequest, step time.Duration) (map[string]*metricsAcc, error) {
	m := plan.Query.Metrics
	accs := map[string]*metricsAcc{}
	for _, whole := range []bool{false, true} {
		q, args := metricsSQL(r.store, dedupFor(r.store.Capabilities(), req.Since, req.Until), plan, c, req.Project, req.Since, req.Until, step, whole)
		rows, err := r.store.Conn().Query(ctx, q, args...)
		if err != nil {
			return nil, fmt.Errorf("search metrics: %w", err)
		}
		for rows.Next() {
			var (
				b        int64
				n        uint64
				sum      float64
				lo, hi   float64
				qs       []float64
				rawLabel = make([]string, len(m.By))
			)
			dest := []any{&b}
			for i := range rawLabel {
				dest = append(dest, &rawLabel[i])
			}
			dest = append(dest, &n, &sum, &lo, &hi, &qs)
			if err := rows.Scan(dest...); err != nil {
				rows.Close()
				return nil, fmt.Errorf("search metrics: %w", err)
			}
			labels := make([]traceql.Value, len(m.By))
			for i := range m.By {
				labels[i] = fieldValue(rawLabel[i])
			}
			key := labelsKey(labels)
			acc := accs[key]
			if acc == nil {
				acc = &metricsAcc{labels: labelsMap(m, labels), steps: map[int64]*metricsCell{}}
				accs[key] = acc
			}
			scale := metricsScale(m)
			for i := range qs {
				qs[i] *= scale
			}
			cell := &metricsCell{n: float64(n), sum: sum * scale, lo: lo * scale, hi: hi * scale, qs: qs}
			if whole {
				acc.total = *cell
			} else {
				acc.steps[b] = cell
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("search metrics: %w", err)
		}
	}
	return accs, nil
}

// metricsSQL builds a one-filter metrics query's statement: per step
// (whole false) or over the window (whole true, step index 0), per label
// set, the count, sum, minimum, maximum and quantiles of the argument.
func metricsSQL(t tables, d spanDedup, p *traceql.Plan, c searchPlanSQL, project string, since, until time.Time, step time.Duration, whole bool) (string, []any) {
	m := p.Query.Metrics
	var args []any
	cols := []string{"start_ns"}
	for i, e := range m.By {
		v := c.values[p.FieldIndex(e)]
		cols = append(cols, v.q+" AS l"+strconv.Itoa(i))
		args = append(args, v.args...)
	}
	x := "toFloat64(1)"
	if m.Arg != nil {
		v := c.values[p.FieldIndex(m.Arg)]
		x = "toFloat64OrNull(substring(" + v.q + ", 2))"
		args = append(args, v.args...)
	}
	cols = append(cols, x+" AS x")
	cond := c.filters[0]
	inner := "SELECT " + strings.Join(cols, ", ") + " FROM " + d.from(t) +
		" WHERE project = ? AND start >= ? AND start <= ? AND start_ns >= ? AND start_ns <= ? AND " + cond.q + d.end()
	args = append(args, project, since.UTC().Truncate(time.Second), until.UTC(), uint64(since.UnixNano()), uint64(until.UnixNano()))
	args = append(args, cond.args...)
	bucket := "toInt64(intDiv(start_ns, " + strconv.FormatInt(int64(step), 10) + "))"
	if whole {
		bucket = "toInt64(0)"
	}
	group := []string{"b"}
	sel := []string{bucket + " AS b"}
	for i := range m.By {
		sel = append(sel, "l"+strconv.Itoa(i))
		group = append(group, "l"+strconv.Itoa(i))
	}
	qs := "[toFloat64(0)]"
	if len(m.Quantiles) > 0 {
		levels := make([]string, len(m.Quantiles))
		for i, q := range m.Quantiles {
			levels[i] = strconv.FormatFloat(q, 'g', -1, 64)
		}
		qs = "arrayMap(v -> toFloat64(v), quantilesExact(" + strings.Join(levels, ", ") + ")(assumeNotNull(x)))"
	}
	sel = append(sel, "count(x)", "toFloat64(ifNull(sum(x), 0))", "toFloat64(ifNull(min(x), 0))", "toFloat64(ifNull(max(x), 0))", qs)
	return "SELECT " + strings.Join(sel, ", ") + " FROM (" + inner + ") WHERE isNotNull(x) GROUP BY " + strings.Join(group, ", "), args
}

// metricsSeries turns the accumulated figures into series, ordered by
// their labels, keeping at most maxSeries (the largest totals).
func metricsSeries(m *traceql.Metrics, accs map[string]*metricsAcc, since, until time.Time, step time.Duration, maxSeries int) ([]Series, bool) {
	quantiles := []float64{0}
	if len(m.Quantiles) > 0 {
		quantiles = m.Quantiles
	}
	window := until.Sub(since).Seconds()
	var out []Series
	for _, acc := range accs {
		if acc.total.n == 0 {
			continue
		}
		for qi, q := range quantiles {
			s := Series{Labels: acc.labels, Total: acc.total.value(m, qi, window)}
			if len(m.Quantiles) > 0 {
				s.Labels = withLabel(acc.labels, "p", strconv.FormatFloat(q, 'g', -1, 64))
			}
			for _, b := range stepKeys(acc.steps) {
				s.Points = append(s.Points, Point{T: time.Unix(0, b*int64(step)).UTC(), V: acc.steps[b].value(m, qi, step.Seconds())})
			}
			out = append(out, s)
		}
	}
	truncated := false
	if len(out) > maxSeries {
		slices.SortFunc(out, func(a, b Series) int { return cmp.Compare(b.Total, a.Total) })
		out, truncated = out[:maxSeries], true
	}
	slices.SortFunc(out, func(a, b Series) int { return strings.Compare(labelsText(a.Labels), labelsText(b.Labels)) })
	return out, truncated
}

func withLabel(m map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(m)+1)
	for a, b := range m {
		out[a] = b
	}
	out[k] = v
	return out
}

func stepKeys(m map[int64]*metricsCell) []int64 {
	out := make([]int64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// labelsText is a label set as text, keys in order, for sorting.
func labelsText(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "=" + l[k] + "\x00")
	}
	return b.String()
}
