package query

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tallyhq/tally/attribution"
	"github.com/tallyhq/tally/schema"
)

// ErrInvalidFilter wraps the errors of a filter the caller got wrong (an
// unknown dimension or bucket, a range too long for its bucket): the API
// answers them with 400.
var ErrInvalidFilter = errors.New("invalid filter")

// Cost report dimensions (CostFilter.By).
const (
	ByAgent        = "agent"
	ByModel        = "model"
	ByTask         = "task"
	ByProvider     = "provider"
	ByTool         = "tool"
	ByConversation = "conversation"
	ByUser         = "user"
	ByService      = "service"
)

// Time series buckets (CostFilter.Bucket).
const (
	BucketNone   = ""
	BucketMinute = "minute"
	BucketHour   = "hour"
	BucketDay    = "day"
)

// MaxMinuteRange is the longest range a minute-bucketed report may cover:
// minute buckets are computed from raw spans.
const MaxMinuteRange = 24 * time.Hour

// DefaultCostRange is the range of a report whose Since is zero.
const DefaultCostRange = 24 * time.Hour

// The groups a cost report lists: DefaultCostGroups unless CostFilter.Limit
// says otherwise, at most MaxCostGroups. A day of a busy deployment has
// hundreds of thousands of conversations: listed whole, a report by
// conversation was tens of megabytes of JSON.
const (
	DefaultCostGroups = 1000
	MaxCostGroups     = 100_000
)

// byDimension maps each CostFilter.By to its rollup grain and column.
var byDimension = map[string]struct {
	grain  uint8
	column string
}{
	ByAgent:        {schema.GrainAgent, "agent"},
	ByModel:        {schema.GrainModel, "model"},
	ByTask:         {schema.GrainTask, "task"},
	ByProvider:     {schema.GrainProvider, "provider"},
	ByTool:         {schema.GrainTool, "tool"},
	ByService:      {schema.GrainService, "service"},
	ByConversation: {schema.GrainConversation, "conversation_id"},
	ByUser:         {schema.GrainUser, "user_id"},
}

// CostDimensions lists the valid values of CostFilter.By.
func CostDimensions() []string {
	return []string{ByAgent, ByModel, ByTask, ByProvider, ByTool, ByConversation, ByUser, ByService}
}

// CostFilter selects a cost report.
type CostFilter struct {
	Project string
	// By is the dimension groups are keyed on: agent (the span's agent, else
	// its nearest enclosing agent's), model, task (the run's), provider,
	// tool (the enclosing tool call's; see attribution/retrytax.go for inference spans
	// charged to a retried tool), conversation, user or service.
	By string
	// Since and Until bound the spans' start times, [Since, Until). A zero
	// Until is now; a zero Since is Until − DefaultCostRange.
	Since, Until time.Time
	// Bucket adds a time series per group: "" (none), minute (ranges up to
	// MaxMinuteRange), hour or day (UTC).
	Bucket string
	// Agent, Service and User keep only the spans of that agent (the
	// span's, else its nearest enclosing agent's), service or user. The
	// hourly rollup is kept per dimension, not per combination, so a
	// filtered report is computed live from spans (Freshness shows no
	// rolled-up hours): as exact, slower over long ranges.
	Agent, Service, User string
	// Limit is the most groups the report lists, the costliest first (0:
	// DefaultCostGroups, at most MaxCostGroups); the others are added up
	// in CostReport.Others.
	Limit int
}

// filtered reports whether the filter narrows the spans.
func (f CostFilter) filtered() bool { return f.Agent != "" || f.Service != "" || f.User != "" }

// match reports whether an attributed span passes the filter.
func (f CostFilter) match(a *attribution.Attributed) bool {
	return (f.Agent == "" || a.Agent == f.Agent) && (f.Service == "" || a.Service == f.Service) &&
		(f.User == "" || a.User == f.User)
}

// withDefaults fills the zero bounds.
func (f CostFilter) withDefaults(now time.Time) CostFilter {
	if f.Until.IsZero() {
		f.Until = now
	}
	if f.Since.IsZero() {
		f.Since = f.Until.Add(-DefaultCostRange)
	}
	f.Since, f.Until = f.Since.UTC(), f.Until.UTC()
	return f
}

// Validate checks the dimension, the bucket and the range, with zero bounds
// defaulted as Costs does at time now. Its errors wrap ErrInvalidFilter.
func (f CostFilter) Validate(now time.Time) error {
	f = f.withDefaults(now)
	if _, ok := byDimension[f.By]; !ok {
		return fmt.Errorf("%w: by %q: want one of %s", ErrInvalidFilter, f.By, strings.Join(CostDimensions(), ", "))
	}
	switch f.Bucket {
	case BucketNone, BucketHour, BucketDay:
	case BucketMinute:
		if f.Until.Sub(f.Since) > MaxMinuteRange {
			return fmt.Errorf("%w: bucket minute covers at most %s; the range is %s", ErrInvalidFilter, MaxMinuteRange, f.Until.Sub(f.Since))
		}
	default:
		return fmt.Errorf("%w: bucket %q: want minute, hour or day", ErrInvalidFilter, f.Bucket)
	}
	if f.Until.Before(f.Since) {
		return fmt.Errorf("%w: until is before since", ErrInvalidFilter)
	}
	if f.Limit < 0 || f.Limit > MaxCostGroups {
		return fmt.Errorf("%w: limit %d: want 1 to %d groups (0: %d)", ErrInvalidFilter, f.Limit, MaxCostGroups, DefaultCostGroups)
	}
	return nil
}

// CostTotals are the measures of a set of spans. Each span counts once
// (duplicates deliveries are collapsed). Tokens count only spans that carry
// non-aggregated usage, except in a run where none does: there the run's
// largest aggregated (agent) span counts, as in a run's summary (summarize). Costs add up over
// all spans.
type CostTotals struct {
	Spans       uint64            `json:"spans"`
	LLMCalls    uint64            `json:"llm_calls"`
	ToolCalls   uint64            `json:"tool_calls"`
	ToolRetries uint64            `json:"tool_retries"`
	ToolErrors  uint64            `json:"tool_errors"`
	Usage       attribution.Usage `json:"usage"`
	Cost        attribution.Cost  `json:"cost"`
	// UnpricedSpans carried usage but matched no price entry: their cost is
	// missing from Cost, not zero.
	UnpricedSpans uint64 `json:"unpriced_spans"`
	// ClientCostSpans carried a cost of their own (it wins over the catalog).
	ClientCostSpans uint64 `json:"client_cost_spans"`
	// RetryTaxUSD is the part of Cost.Total spent on inference inside failed
	// or retried tool-call attempts (see attribution/retrytax.go); RetryTaxCalls counts
	// those inference spans.
	RetryTaxUSD   float64 `json:"retry_tax_usd"`
	RetryTaxCalls uint64  `json:"retry_tax_calls"`
	// ByConfidence splits Cost.Total by how sure it is (the spans' cost
	// confidence): the share that is exact, an upper or lower bound,
	// corrected or approximate. What is left of Cost.Total is the spend of
	// spans stored before tally rated costs.
	ByConfidence schema.ConfidenceSpend `json:"cost_by_confidence"`

	unpricedInput, unpricedOutput uint64
}

// UnpricedTokens returns the input and output tokens of the unpriced spans,
// which the rollup stores to list the models no price matched.
func (t *CostTotals) UnpricedTokens() (input, output uint64) {
	return t.unpricedInput, t.unpricedOutput
}

func (t *CostTotals) add(o *CostTotals) {
	t.Spans += o.Spans
	t.LLMCalls += o.LLMCalls
	t.ToolCalls += o.ToolCalls
	t.ToolRetries += o.ToolRetries
	t.ToolErrors += o.ToolErrors
	t.Usage.Add(o.Usage)
	t.Cost.Add(o.Cost)
	t.UnpricedSpans += o.UnpricedSpans
	t.ClientCostSpans += o.ClientCostSpans
	t.RetryTaxUSD += o.RetryTaxUSD
	t.RetryTaxCalls += o.RetryTaxCalls
	t.ByConfidence.Merge(o.ByConfidence)
	t.unpricedInput += o.unpricedInput
	t.unpricedOutput += o.unpricedOutput
}

// AddSpan adds one attributed span: its counts, and its tokens and cost as
// far as they count (attribution.Attributed's UsageCounted and CostCounted).
func (t *CostTotals) AddSpan(a *attribution.Attributed) {
	t.Spans++
	switch a.SpanType {
	case schema.TypeInference:
		if (!attribution.HasOwnUsage(a.UsageMode) || a.UsageCounted) && !a.RecordedCall { // a wrapper of another span's call, or a record of it, is not a call
			t.LLMCalls++
		}
	case schema.TypeTool:
		t.ToolCalls++
		if a.ToolRetry {
			t.ToolRetries++
		}
		if a.ToolError {
			t.ToolErrors++
		}
	}
	if a.UsageCounted {
		t.Usage.Add(a.Usage)
	}
	if !a.CostCounted {
		return
	}
	t.Cost.Add(a.Span.Cost)
	t.ByConfidence.Add(a.Confidence, a.Span.Cost.Total)
	switch a.CostSource {
	case schema.CostUnpriced:
		t.UnpricedSpans++
		t.unpricedInput += a.Usage.Input
		t.unpricedOutput += a.Usage.Output
	case schema.CostClient:
		t.ClientCostSpans++
	}
	if a.RetryTax {
		t.RetryTaxUSD += a.Span.Cost.Total
		if !a.RecordedCall { // a record and its request span are one call
			t.RetryTaxCalls++
		}
	}
}

// CostGroup is the totals of one value of the report's dimension ("" for
// spans without one: no agent, no model…), with its time series when the
// report has a bucket.
type CostGroup struct {
	Key string `json:"key"`
	// Models are the raw model names of a by=model group keyed by its
	// catalog model (CostReader.Costs).
	Models []string `json:"models,omitempty"`
	CostTotals
	Series []CostPoint `json:"series,omitempty"`
}

// CostPoint is one bucket of a group's time series. Buckets without spans
// are left out.
type CostPoint struct {
	Time time.Time `json:"time"` // the bucket's start, UTC
	CostTotals
}

// TimeRange is a half-open time range [Since, Until).
type TimeRange struct {
	Since time.Time `json:"since"`
	Until time.Time `json:"until"`
}

// Freshness says where a report's figures came from: closed hours read from
// the hourly rollup, and the ranges read live from raw spans (the open hour,
// the partial hours at the edges, hours not rolled up yet, minute buckets).
type Freshness struct {
	RolledUpHours int         `json:"rolled_up_hours"`
	Live          []TimeRange `json:"live"`
}

// CostReport is the answer to a CostFilter: groups sorted by cost,
// descending, then key, the first CostFilter.Limit of them; GroupsTotal
// says how many there were, Others adds up those left out.
type CostReport struct {
	By          string      `json:"by"`
	Bucket      string      `json:"bucket,omitempty"`
	Since       time.Time   `json:"since"`
	Until       time.Time   `json:"until"`
	Total       CostTotals  `json:"total"`
	Groups      []CostGroup `json:"groups"`
	GroupsTotal int         `json:"groups_total"`
	// Others is the groups past the limit added up (Key ""), with their
	// series added bucket by bucket; nil when every group is listed.
	Others    *CostGroup       `json:"others,omitempty"`
	Unmatched []UnmatchedModel `json:"unmatched"`
	Freshness Freshness        `json:"freshness"`
}

// UnmatchedModel is a model name no price entry matched, with the spans that
// carried usage under it in the range.
type UnmatchedModel struct {
	Provider     string `json:"provider"`
	Model        string `json:"model"`
	Spans        uint64 `json:"spans"`
	InputTokens  uint64 `json:"input_tokens"`
	OutputTokens uint64 `json:"output_tokens"`
}

// view is one grouping of an aggregation: a rollup grain and the columns
// (see dimValue) groups are keyed on. A view of unpriced spans only
// (unpriced) reads, from the rollup, only the groups with unpriced spans
// and only their unpriced figures (UnpricedSpans and the unpriced tokens):
// all a report's list of unmatched models needs of them.
type view struct {
	grain    uint8
	dims     []string
	unpriced bool
	// top, when set (one dimension, no buckets), asks for the view's
	// costliest keys only (costtop.go).
	top *topView
}

type bucketKey struct {
	bucket int64 // unix seconds of the bucket's start; 0 without buckets
	key    string
}

type aggregation map[bucketKey]*CostTotals

func (g aggregation) at(k bucketKey) *CostTotals {
	t := g[k]
	if t == nil {
		t = &CostTotals{}
		g[k] = t
	}
	return t
}

// dimValue is the value of rollup column dim for an attributed span.
func dimValue(a *attribution.Attributed, dim string) string {
	switch dim {
	case "agent":
		return a.Agent
	case "model":
		return a.Model
	case "provider":
		return a.Provider
	case "task":
		return a.Task
	case "service":
		return a.Service
	case "tool":
		return a.Tool
	case "conversation_id":
		return a.Conversation
	case "user_id":
		return a.User
	}
	return ""
}

func bucketStart(t time.Time, bucket string) int64 {
	switch bucket {
	case BucketMinute:
		return t.Truncate(time.Minute).Unix()
	case BucketHour:
		return t.Truncate(time.Hour).Unix()
	case BucketDay:
		return t.Truncate(24 * time.Hour).Unix()
	}
	return 0
}

// ceilTo is t rounded up to a whole multiple of d (an hour, a minute).
func ceilTo(t time.Time, d time.Duration) time.Time {
	c := t.Truncate(d)
	if c.Before(t) {
		c = c.Add(d)
	}
	return c
}

// aggregate computes the views over [since, until) for one project, reading
// rolled-up closed hours from the rollup and everything else live from raw
// spans (see Freshness). Minute buckets are always live.
//
// A non-nil match keeps only the spans it accepts; the rollup cannot
// answer for such a subset, so every hour is read live.
func (r *core) aggregate(ctx context.Context, project string, since, until time.Time, bucket string, views []view,
	match func(*attribution.Attributed) bool) ([]aggregation, Freshness, error) {
	out := make([]aggregation, len(views))
	for i := range out {
		out[i] = aggregation{}
	}
	var fresh Freshness
	var rolled []time.Time
	// edges are the closed, rolled-up hours the range starts in after
	// their start and ends in before their end (one hour when the range
	// is within it): their parts of the range are read from the edge hour
	// cache.
	var edges []rolledHour
	if bucket != BucketMinute && match == nil {
		hours, err := r.rolledHours(ctx, since.Truncate(time.Hour), ceilTo(until, time.Hour))
		if err != nil {
			return nil, fresh, err
		}
		for _, h := range hours {
			if h.hour.Before(since) || h.hour.Add(time.Hour).After(until) {
				edges = append(edges, h)
				continue
			}
			rolled = append(rolled, h.hour)
		}
	}
	fresh.RolledUpHours = len(rolled)
	fresh.Live = []TimeRange{}
	cursor := since
	for _, h := range rolled {
		if h.After(cursor) {
			fresh.Live = append(fresh.Live, TimeRange{cursor, h})
		}
		cursor = h.Add(time.Hour)
	}
	if until.After(cursor) {
		fresh.Live = append(fresh.Live, TimeRange{cursor, until})
	}
	// The rollup reads (one per view) and the live ranges are independent:
	// run them at once, each into aggregations of its own, so ClickHouse
	// reads one while tally attributes another; then add them up in a fixed
	// order, so the sums do not depend on which finished first.
	var tasks []func(ctx context.Context) ([]aggregation, error)
	if len(rolled) > 0 {
		for i, v := range views {
			tasks = append(tasks, func(ctx context.Context) ([]aggregation, error) {
				part := make([]aggregation, len(views))
				part[i] = aggregation{}
				if v.top != nil {
					// The keys' costs first; their measures once the
					// live hours are added (finishTop).
					var err error
					v.top.rolled, err = r.readRollupCosts(ctx, project, rolled, v)
					return part, err
				}
				return part, r.readRollup(ctx, project, rolled, bucket, v, part[i])
			})
		}
	}
	for _, lr := range fresh.Live {
		tasks = append(tasks, func(ctx context.Context) ([]aggregation, error) {
			part := make([]aggregation, len(views))
			for i := range part {
				part[i] = aggregation{}
			}
			ranges := []TimeRange{lr}
			for _, edge := range edges {
				var err error
				ranges, err = narrowed(ranges, func(lr TimeRange) ([]TimeRange, error) {
					return r.aggregateEdge(ctx, project, edge, lr, bucket, views, part)
				})
				if err != nil {
					return nil, err
				}
			}
			if match == nil {
				var err error
				if ranges, err = r.aggregateOpenHours(ctx, project, ranges, bucket, views, part); err != nil {
					return nil, err
				}
			}
			for _, lr := range ranges {
				if err := r.aggregateLive(ctx, project, lr, bucket, views, match, part); err != nil {
					return nil, err
				}
			}
			return part, nil
		})
	}
	parts := make([][]aggregation, len(tasks))
	g, gctx := errgroup.WithContext(ctx)
	for i, task := range tasks {
		g.Go(func() error {
			var err error
			parts[i], err = task(gctx)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, fresh, err
	}
	for _, part := range parts {
		for i, agg := range part {
			if len(out[i]) == 0 && len(agg) > 0 {
				out[i] = agg // the first part of a view is its sum so far (a day by conversation: ~200k keys)
				continue
			}
			for k, t := range agg {
				out[i].at(k).add(t)
			}
		}
	}
	for i, v := range views {
		if v.top != nil {
			var err error
			if out[i], err = r.finishTop(ctx, project, rolled, v, v.top, out[i]); err != nil {
				return nil, fresh, err
			}
		}
	}
	return out, fresh, nil
}

// liveChunk bounds the range one live load covers, to bound the memory of
// the deduplicating read on the server and of the attribution here.
const liveChunk = 6 * time.Hour

// aggregateLive adds the spans of lr, read from raw spans, to the views.
func (r *core) aggregateLive(ctx context.Context, project string, lr TimeRange, bucket string, views []view,
	match func(*attribution.Attributed) bool, out []aggregation) error {
	for from := lr.Since; from.Before(lr.Until); from = from.Add(liveChunk) {
		to := from.Add(liveChunk)
		if to.After(lr.Until) {
			to = lr.Until
		}
		spans, err := r.loadSpans(ctx, project, from, to, DefaultTraceWindow)
		if err != nil {
			return err
		}
		for i := range spans {
			if match == nil || match(&spans[i]) {
				addAttributed(out, views, bucket, &spans[i])
			}
		}
	}
	return nil
}

// aggregateEdge adds the part of lr in the edge hour (a closed, rolled-up
// hour) to the views from the edge hour cache: its whole minutes from the
// hour's sums, the part of a minute it starts or ends in from the spans
// of that minute kept with the hour. It returns the rest of lr, to be read
// live: lr whole when the cache cannot answer (off, the hour or a minute
// too large, a view it does not add up, lr outside the hour).
func (r *core) aggregateEdge(ctx context.Context, project string, edge rolledHour, lr TimeRange, bucket string, views []view,
	out []aggregation) ([]TimeRange, error) {
	p, in := partOf(lr, edge.hour)
	vis, ok := edgeViewsOf(views)
	if !in || !ok {
		return []TimeRange{lr}, nil
	}
	h, ok, err := r.edges.get(ctx, project, edge.hour, edge.version, func(ctx context.Context, bound, partSpans int) (*edgeHour, error) {
		return r.loadEdgeHour(ctx, project, edge, bound, partSpans)
	})
	if err != nil || !ok {
		return []TimeRange{lr}, err
	}
	// Both ends' minutes are had before anything is added: a minute the
	// cache cannot answer sends lr whole to be read live.
	var spans [2][]edgeSpan
	for i, end := range p.ends {
		if !end.Since.Before(end.Until) {
			continue
		}
		var ok bool
		var err error
		spans[i], ok, err = r.edges.minute(ctx, h, end.Since.Truncate(time.Minute), func(ctx context.Context, from time.Time) ([]edgeSpan, error) {
			return r.loadEdgeSpans(ctx, project, from, from.Add(time.Minute))
		})
		if err != nil || !ok {
			return []TimeRange{lr}, err
		}
	}
	for i, end := range p.ends {
		addSpansIn(out, views, bucket, spans[i], end)
	}
	h.addMinutes(out, vis, edge.hour, bucket, p.m0, p.m1)
	return p.rest(lr), nil
}

// narrowed is what take leaves of each of ranges (take adds the part of a
// range it answers for, and returns the rest).
func narrowed(ranges []TimeRange, take func(TimeRange) ([]TimeRange, error)) ([]TimeRange, error) {
	var rest []TimeRange
	for _, lr := range ranges {
		more, err := take(lr)
		if err != nil {
			return nil, err
		}
		rest = append(rest, more...)
	}
	return rest, nil
}

// addSpansIn adds the spans starting in p to the views.
func addSpansIn(out []aggregation, views []view, bucket string, spans []edgeSpan, p TimeRange) {
	from, to := uint64(p.Since.UnixNano()), uint64(p.Until.UnixNano())
	for j := range spans {
		if s := &spans[j]; s.startNs >= from && s.startNs < to {
			addToViews(out, views, bucket, s.startNs, s.dim, &s.totals)
		}
	}
}

// addAttributed adds the attributed span a to the views.
func addAttributed(out []aggregation, views []view, bucket string, a *attribution.Attributed) {
	var t CostTotals
	t.AddSpan(a)
	addToViews(out, views, bucket, a.StartNs, func(d string) string { return dimValue(a, d) }, &t)
}

// addToViews adds the totals t of one span starting at startNs, whose
// value of each dimension is dim's, to every view's aggregation in out.
func addToViews(out []aggregation, views []view, bucket string, startNs uint64, dim func(string) string, t *CostTotals) {
	b := bucketStart(nsTime(startNs), bucket)
	for vi, v := range views {
		vals := make([]string, len(v.dims))
		for di, d := range v.dims {
			vals[di] = dim(d)
		}
		out[vi].at(bucketKey{b, strings.Join(vals, "\x00")}).add(t)
	}
}

// rolledHour is an hour the rollup has computed, and the version of its
// latest computation.
type rolledHour struct {
	hour    time.Time
	version uint64
	rawRows uint64 // the spans table's rows in the hour when it was computed
}

// rolledHours lists the hours in [from, to) the rollup has computed, in
// order.
func (r *core) rolledHours(ctx context.Context, from, to time.Time) ([]rolledHour, error) {
	if !to.After(from) {
		return nil, nil
	}
	q, args := rolledHoursSQL(r.store, from, to)
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read rollup hours: %w", err)
	}
	type row struct {
		h       uint32
		version uint64
		rawRows uint64
	}
	found, err := scanAll(rows, func(x *row) []any { return []any{&x.h, &x.version, &x.rawRows} })
	if err != nil {
		return nil, fmt.Errorf("read rollup hours: %w", err)
	}
	hours := make([]rolledHour, len(found))
	for i, x := range found {
		hours[i] = rolledHour{time.Unix(int64(x.h), 0).UTC(), x.version, x.rawRows}
	}
	return hours, nil
}

// rolledHoursSQL builds rolledHours' statement.
func rolledHoursSQL(t tables, from, to time.Time) (string, []any) {
	return "SELECT toUInt32(hour) AS h, max(version), argMax(raw_rows, version) FROM " + t.Table(schema.TableCostRollupHours) +
		" WHERE hour >= ? AND hour < ? GROUP BY h ORDER BY h", []any{from.UTC(), to.UTC()}
}

// rollupMeasures is the SELECT list of measures over the rollup, in
// CostTotals scan order.
const rollupMeasures = `sum(spans), sum(llm_calls), sum(tool_calls), sum(tool_retries), sum(tool_errors),
	sum(input_tokens), sum(cache_read_tokens), sum(cache_write_tokens), sum(output_tokens), sum(reasoning_tokens),
	sum(cost_total), sum(cost_input), sum(cost_cache_read), sum(cost_cache_write), sum(cost_output),
	sum(unpriced_spans), sum(unpriced_input_tokens), sum(unpriced_output_tokens), sum(client_cost_spans),
	sum(retry_tax_usd), sum(retry_tax_calls),
	sum(cost_exact), sum(cost_upper_bound), sum(cost_lower_bound), sum(cost_corrected), sum(cost_approximate)`

func (t *CostTotals) dest() []any {
	return []any{&t.Spans, &t.LLMCalls, &t.ToolCalls, &t.ToolRetries, &t.ToolErrors,
		&t.Usage.Input, &t.Usage.CacheRead, &t.Usage.CacheWrite, &t.Usage.Output, &t.Usage.Reasoning,
		&t.Cost.Total, &t.Cost.Input, &t.Cost.CacheRead, &t.Cost.CacheWrite, &t.Cost.Output,
		&t.UnpricedSpans, &t.unpricedInput, &t.unpricedOutput, &t.ClientCostSpans,
		&t.RetryTaxUSD, &t.RetryTaxCalls,
		&t.ByConfidence.CostExact, &t.ByConfidence.CostUpperBound, &t.ByConfidence.CostLowerBound,
		&t.ByConfidence.CostCorrected, &t.ByConfidence.CostApproximate}
}

// latestGeneration is the condition that selects, from the rollup table,
// the rows of the latest computation of each hour (two ? for the first and
// last hour). Every computation of an hour writes every key the hour has, and
// a zero row (a tombstone) for every key it no longer has, all with one
// version: the latest version's rows are the hour's complete, current image,
// so no FINAL is needed. Reading without FINAL keeps a month of rollup rows
// fast on servers where FINAL merges in one thread.
func latestGeneration(table string) string {
	return "(hour, version) IN (SELECT hour, max(version) FROM " + table + " WHERE hour >= ? AND hour <= ? GROUP BY hour)"
}

// readRollup adds the rollup's rows of the given hours to agg. The hour list
// is the one read from the rollup's hour record before, so that hours read
// here and hours read live never overlap.
func (r *core) readRollup(ctx context.Context, project string, hours []time.Time, bucket string, v view, agg aggregation) error {
	byHour := bucket != BucketNone
	q, args := readRollupSQL(r.store, project, hours, v, byHour, "", "", nil)
	return r.scanRollup(ctx, q, args, byHour, bucket, v, agg)
}

// scanRollup runs q, a read of the rollup's rows of v (readRollupSQL's),
// and adds them to agg.
func (r *core) scanRollup(ctx context.Context, q string, args []any, byHour bool, bucket string, v view, agg aggregation) error {
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("read cost rollup: %w", err)
	}
	defer rows.Close()
	// Each row is added up as it is read (a day by conversation is ~200k
	// rows: held first, they were a third of the report's time).
	var h uint32
	var t CostTotals
	vals := make([]string, len(v.dims))
	var dest []any
	if byHour {
		dest = append(dest, &h)
	}
	for i := range vals {
		dest = append(dest, &vals[i])
	}
	if v.unpriced {
		dest = append(dest, &t.UnpricedSpans, &t.unpricedInput, &t.unpricedOutput)
	} else {
		dest = append(dest, t.dest()...)
	}
	for rows.Next() {
		t = CostTotals{}
		if err := rows.Scan(dest...); err != nil {
			return fmt.Errorf("read cost rollup: %w", err)
		}
		if t.Spans == 0 && !v.unpriced {
			continue // tombstones only (an unpriced view reads none: see readRollupSQL)
		}
		var b int64
		if byHour {
			b = bucketStart(time.Unix(int64(h), 0).UTC(), bucket)
		}
		agg.at(bucketKey{b, strings.Join(vals, "\x00")}).add(&t)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read cost rollup: %w", err)
	}
	return nil
}

// readRollupSQL builds readRollup's statement: v's rows of the latest
// computation of the given hours (at least one, in order), summed per
// dimension values (all of them summed for a view of no dimension), and
// per hour if byHour. measures, when not "", are the sums selected
// instead of every measure (rollupMeasures, or an unpriced view's);
// cond, when not "", narrows the rows, with its args condArgs.
//
// The hours are given as their range less the hours in it that are not
// listed (usually none: the rollup computes every closed hour), not as a
// list of every hour: ClickHouse 18.16 took ~8 ms to analyse the 720
// literals of a month. The latest computation of an hour is looked up
// among v's grain of the project only (latestGenerationOf): every
// computation writes every key of every grain of its hours with one
// version, tombstones included, so the grain's newest version is the
// hour's; the whole table's (latestGeneration) read every grain's rows
// (at 10M spans 555k rows a month, 3.6k of them the agents').
func readRollupSQL(t tables, project string, hours []time.Time, v view, byHour bool, measures, cond string, condArgs []any) (string, []any) {
	first, last := hours[0], hours[len(hours)-1]
	var gaps []string
	next := first
	for _, h := range hours {
		for ; next.Before(h); next = next.Add(time.Hour) {
			gaps = append(gaps, strconv.FormatInt(next.Unix(), 10))
		}
		next = h.Add(time.Hour)
	}
	table := t.Table(schema.TableCostRollup)
	having := ""
	if measures == "" {
		measures = rollupMeasures
		if v.unpriced {
			measures = "sum(unpriced_spans) AS n_unpriced, sum(unpriced_input_tokens), sum(unpriced_output_tokens)"
			having = "\nHAVING n_unpriced > 0"
		}
	}
	sel, keys := slices.Clone(v.dims), slices.Clone(v.dims)
	if byHour {
		sel, keys = append([]string{"toUInt32(hour) AS h"}, sel...), append([]string{"h"}, keys...)
	}
	q := "SELECT " + strings.Join(append(sel, measures), ", ") +
		"\nFROM " + table +
		"\nWHERE project = ? AND grain = ? AND hour >= ? AND hour <= ?"
	if len(gaps) > 0 {
		q += " AND toUInt32(hour) NOT IN (" + strings.Join(gaps, ",") + ")"
	}
	args := []any{project, v.grain, first, last}
	if cond != "" {
		q += " AND " + cond
		args = append(args, condArgs...)
	}
	q += "\n  AND " + latestGenerationOf(table)
	if len(keys) > 0 {
		q += "\nGROUP BY " + strings.Join(keys, ", ")
	}
	return q + having, append(args, project, v.grain, first, last)
}

// latestGenerationOf is latestGeneration within one project and grain (two
// ? more before the hours: the project and the grain).
func latestGenerationOf(table string) string {
	return "(hour, version) IN (SELECT hour, max(version) FROM " + table +
		" WHERE project = ? AND grain = ? AND hour >= ? AND hour <= ? GROUP BY hour)"
}

var unmatchedView = view{grain: schema.GrainModel, dims: []string{"provider", "model"}, unpriced: true}

// Costs reports cost and tokens per value of f.By over [f.Since, f.Until),
// as totals and, with a bucket, as time series. Closed hours come from the
// hourly rollup once Rollup has computed them, everything else from raw
// spans; either way every span counts once. The report also lists the
// models no price matched.
func (r SpendReader) Costs(ctx context.Context, f CostFilter) (CostReport, error) {
	rep, groups, err := r.allCosts(ctx, f, cmp.Or(f.Limit, DefaultCostGroups))
	if err != nil {
		return rep, err
	}
	rep.setGroups(groups, f.Limit)
	return rep, nil
}

// setGroups lists the first limit of groups (in order; DefaultCostGroups
// for 0) in rep.Groups and adds up the rest in rep.Others. The groups are
// pointers until here: a report by conversation over a day has ~200k
// groups of ~300 bytes, and sorting and copying them as values was most
// of its time.
func (rep *CostReport) setGroups(groups []*CostGroup, limit int) {
	if limit <= 0 {
		limit = DefaultCostGroups
	}
	rep.GroupsTotal = max(rep.GroupsTotal, len(groups))
	rep.Groups = make([]CostGroup, 0, min(limit, len(groups)))
	for _, g := range groups[:min(limit, len(groups))] {
		rep.Groups = append(rep.Groups, *g)
	}
	if len(groups) <= limit {
		return
	}
	others := cmp.Or(rep.Others, &CostGroup{})
	at := map[time.Time]int{}
	for _, g := range groups[limit:] {
		others.add(&g.CostTotals)
		others.Series = addSeries(others.Series, at, g.Series)
	}
	sortSeries(others.Series)
	rep.Others = others
}

// costOrder orders groups costliest first, then by key.
func costOrder(a, b *CostGroup) int { return costThenKey(a.Cost.Total, a.Key, b.Cost.Total, b.Key) }

// costThenKey orders by cost, the highest first, then by key: the order a
// report lists its groups in.
func costThenKey(aCost float64, aKey string, bCost float64, bKey string) int {
	return cmp.Or(cmp.Compare(bCost, aCost), strings.Compare(aKey, bKey))
}

// allCosts is Costs with its groups, in costOrder, apart from the report:
// every group, or with top above 0 (a report without buckets listing up
// to maxTopKeys groups), the top costliest only, the others added up in
// the report's Others and counted in its GroupsTotal.
func (r SpendReader) allCosts(ctx context.Context, f CostFilter, top int) (CostReport, []*CostGroup, error) {
	f = f.withDefaults(time.Now())
	if err := f.Validate(f.Until); err != nil {
		return CostReport{}, nil, err
	}
	dim := byDimension[f.By]
	var match func(*attribution.Attributed) bool
	if f.filtered() {
		match = f.match
	}
	v := view{grain: dim.grain, dims: []string{dim.column}}
	if top > 0 && top <= maxTopKeys && f.Bucket == BucketNone && match == nil && (manyKeys[f.By] || r.topEvery) {
		v.top = &topView{limit: top}
	}
	aggs, fresh, err := r.aggregate(ctx, f.Project, f.Since, f.Until, f.Bucket, []view{v, unmatchedView}, match)
	if err != nil {
		return CostReport{}, nil, err
	}
	rep := CostReport{By: f.By, Bucket: f.Bucket, Since: f.Since, Until: f.Until, Groups: []CostGroup{},
		Unmatched: unmatchedFrom(aggs[1]), Freshness: fresh}
	if v.top != nil {
		rep.GroupsTotal = v.top.total
		if v.top.total > len(aggs[0]) {
			rep.Others = &CostGroup{CostTotals: v.top.others}
			rep.Total.add(&v.top.others)
		}
	}
	byKey := map[string]*CostGroup{}
	var groups []*CostGroup
	for k, t := range aggs[0] {
		g := byKey[k.key]
		if g == nil {
			g = &CostGroup{Key: k.key}
			byKey[k.key] = g
			groups = append(groups, g)
		}
		g.add(t)
		rep.Total.add(t)
		if f.Bucket != BucketNone {
			g.Series = append(g.Series, CostPoint{Time: time.Unix(k.bucket, 0).UTC(), CostTotals: *t})
		}
	}
	for _, g := range groups {
		sortSeries(g.Series)
	}
	slices.SortFunc(groups, costOrder)
	return rep, groups, nil
}

func unmatchedFrom(agg aggregation) []UnmatchedModel {
	byModel := map[string]*UnmatchedModel{}
	for k, t := range agg {
		if t.UnpricedSpans == 0 {
			continue
		}
		m := byModel[k.key]
		if m == nil {
			provider, model, _ := strings.Cut(k.key, "\x00")
			m = &UnmatchedModel{Provider: provider, Model: model}
			byModel[k.key] = m
		}
		m.Spans += t.UnpricedSpans
		m.InputTokens += t.unpricedInput
		m.OutputTokens += t.unpricedOutput
	}
	out := make([]UnmatchedModel, 0, len(byModel))
	for _, m := range byModel {
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Spans != out[j].Spans {
			return out[i].Spans > out[j].Spans
		}
		return out[i].Provider+"/"+out[i].Model < out[j].Provider+"/"+out[j].Model
	})
	return out
}

// Costs is Reader.Costs, with the model dimension grouped by the catalog
// model: the raw names a provider returns for one model (a dated snapshot on
// success, the requested alias on an error) are one group, its Models the
// raw names beneath. Models no catalog entry matches keep their own group.
func (c *CostReader) Costs(ctx context.Context, f CostFilter) (CostReport, error) {
	top := cmp.Or(f.Limit, DefaultCostGroups)
	if f.By == ByModel && c.catalog != nil {
		top = 0 // the raw names are grouped by catalog model first
	}
	rep, groups, err := c.Reader.allCosts(ctx, f, top)
	if err != nil {
		return rep, err
	}
	if rep.By != ByModel || c.catalog == nil {
		rep.setGroups(groups, f.Limit)
		return rep, nil
	}
	merged := map[string]*CostGroup{}
	var order []*CostGroup
	for _, g := range groups {
		key := g.Key
		if e, _, ok := c.catalog.Lookup("", g.Key, rep.Until); ok && g.Key != "" {
			key = e.Model
		}
		m := merged[key]
		if m == nil {
			m = &CostGroup{Key: key}
			merged[key] = m
			order = append(order, m)
		}
		m.add(&g.CostTotals)
		m.Models = append(m.Models, g.Key)
		m.Series = mergeSeries(m.Series, g.Series)
	}
	for _, g := range order {
		sort.Strings(g.Models)
	}
	slices.SortFunc(order, costOrder)
	rep.setGroups(order, f.Limit)
	return rep, nil
}

// mergeSeries adds b's points into a, bucket by bucket, in time order.
func mergeSeries(a, b []CostPoint) []CostPoint {
	if len(b) == 0 {
		return a
	}
	at := make(map[time.Time]int, len(a))
	for i, p := range a {
		at[p.Time] = i
	}
	a = addSeries(a, at, b)
	sortSeries(a)
	return a
}

// addSeries adds b's points into a, bucket by bucket, at keeping the index
// of each of a's buckets; the buckets new to a are appended.
func addSeries(a []CostPoint, at map[time.Time]int, b []CostPoint) []CostPoint {
	for _, p := range b {
		if i, ok := at[p.Time]; ok {
			a[i].CostTotals.add(&p.CostTotals)
			continue
		}
		at[p.Time] = len(a)
		a = append(a, p)
	}
	return a
}

// sortSeries puts a series in time order.
func sortSeries(a []CostPoint) {
	slices.SortFunc(a, func(x, y CostPoint) int { return x.Time.Compare(y.Time) })
}
