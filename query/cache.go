package query

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/tallyhq/tally/pricing"
	"github.com/tallyhq/tally/schema"
)

// Cache verdicts.
const (
	// VerdictHealthy: eligible calls read from the prompt cache.
	VerdictHealthy = "healthy"
	// VerdictNeverHit: at least MinEligibleCalls calls were long enough to be
	// cached and none read a single cached token — something in the prompt
	// (a timestamp, a reordered tool list) changes on every call.
	VerdictNeverHit = "never_hit"
	// VerdictBelowMinPrefix: calls exist but none reached the model's
	// minimum cacheable prefix, so no cache hit was possible.
	VerdictBelowMinPrefix = "below_min_prefix"
	// VerdictInsufficientData: too few eligible calls to judge, or a model
	// without prompt caching.
	VerdictInsufficientData = "insufficient_data"
)

// Where a group's minimum cacheable prefix came from.
const (
	PrefixFromCatalog = "catalog"         // the model's price entry
	PrefixDefault     = "default"         // the model is not in the catalog: DefaultMinPrefixTokens
	PrefixNoCache     = "no_prompt_cache" // the provider has no prompt caching for the model
)

// CacheThresholds tune the cache verdicts; every report returns the ones it
// used. Zero fields take the defaults.
type CacheThresholds struct {
	// MinEligibleCalls is how many eligible calls of an (agent, model) with
	// zero cache reads make it never_hit (default 5).
	MinEligibleCalls int `json:"min_eligible_calls"`
	// MinEligibleRunCalls is the same for one run (default 2: a run that
	// sends the same long prefix twice should hit the second time).
	MinEligibleRunCalls int `json:"min_eligible_run_calls"`
	// DefaultMinPrefixTokens is the minimum cacheable prefix assumed for a
	// model the catalog does not know (default 1024, OpenAI's and the most
	// common minimum).
	DefaultMinPrefixTokens int `json:"default_min_prefix_tokens"`
}

func (t CacheThresholds) withDefaults() CacheThresholds {
	if t.MinEligibleCalls <= 0 {
		t.MinEligibleCalls = 5
	}
	if t.MinEligibleRunCalls <= 0 {
		t.MinEligibleRunCalls = 2
	}
	if t.DefaultMinPrefixTokens <= 0 {
		t.DefaultMinPrefixTokens = 1024
	}
	return t
}

// CacheFilter selects a cache health report. The report reads raw spans
// (deduplicated) over the range, so keep it to days, not months.
type CacheFilter struct {
	Project      string
	Since, Until time.Time // zero Until: now; zero Since: Until − 24h
	Agent, Model string    // "" for all
	Thresholds   CacheThresholds
	RunLimit     int // never_hit runs listed, at most; default 100
}

// CacheStats are the prompt-cache figures of a set of inference calls (spans
// with non-aggregated usage). A call is eligible when its input tokens (cache
// included) reach its model's minimum cacheable prefix.
type CacheStats struct {
	Calls                   uint64  `json:"calls"`
	EligibleCalls           uint64  `json:"eligible_calls"`
	InputTokens             uint64  `json:"input_tokens"`
	CacheReadTokens         uint64  `json:"cache_read_tokens"`
	CacheWriteTokens        uint64  `json:"cache_write_tokens"`
	EligibleInputTokens     uint64  `json:"eligible_input_tokens"`
	EligibleCacheReadTokens uint64  `json:"eligible_cache_read_tokens"`
	HitRatio                float64 `json:"hit_ratio"` // eligible cache read / eligible input
	Verdict                 string  `json:"verdict"`
}

func (s *CacheStats) addCall(u Usage, eligible bool) {
	s.Calls++
	s.InputTokens += u.Input
	s.CacheReadTokens += u.CacheRead
	s.CacheWriteTokens += u.CacheWrite
	if eligible {
		s.EligibleCalls++
		s.EligibleInputTokens += u.Input
		s.EligibleCacheReadTokens += u.CacheRead
	}
}

// judge fills HitRatio and Verdict.
func (s *CacheStats) judge(minEligible int, cacheable bool) {
	if s.EligibleInputTokens > 0 {
		s.HitRatio = float64(s.EligibleCacheReadTokens) / float64(s.EligibleInputTokens)
	}
	switch {
	case s.Calls == 0 || !cacheable:
		s.Verdict = VerdictInsufficientData
	case s.CacheReadTokens > 0:
		s.Verdict = VerdictHealthy
	case s.EligibleCalls == 0:
		s.Verdict = VerdictBelowMinPrefix
	case s.EligibleCalls >= uint64(minEligible):
		s.Verdict = VerdictNeverHit
	default:
		s.Verdict = VerdictInsufficientData
	}
}

// CacheGroup is the cache health of one (agent, model).
type CacheGroup struct {
	Agent           string `json:"agent"`
	Model           string `json:"model"`
	Provider        string `json:"provider"`
	MinPrefixTokens int    `json:"min_prefix_tokens"`
	PrefixSource    string `json:"prefix_source"`
	CacheStats
	// NeverHitRuns counts the group's runs judged never_hit on their own
	// (at least MinEligibleRunCalls eligible calls, no cache read).
	NeverHitRuns int `json:"never_hit_runs"`
	// ExampleRunIDs are, for a never_hit group, the runs to open: the runs
	// with at least one eligible call of the group and no cache read by the
	// group's calls, most recent call first, at most CacheExampleRuns. A run
	// counts here even with a single eligible call, so a group whose agent
	// calls the model once per run lists its runs too. Empty for the other
	// verdicts.
	ExampleRunIDs []string `json:"example_run_ids"`
}

// CacheExampleRuns is how many example runs a never_hit group lists.
const CacheExampleRuns = 20

// CacheRun is the cache health of one run.
type CacheRun struct {
	TraceID string    `json:"trace_id"`
	Task    string    `json:"task"`
	Start   time.Time `json:"start"`
	Agents  []string  `json:"agents"`
	Models  []string  `json:"models"`
	CacheStats
}

// CacheReport is the answer to a CacheFilter: groups worst first (never_hit,
// then by eligible calls), and the runs judged never_hit, most eligible calls
// first, for an engineer to open.
type CacheReport struct {
	Since         time.Time       `json:"since"`
	Until         time.Time       `json:"until"`
	Thresholds    CacheThresholds `json:"thresholds"`
	Groups        []CacheGroup    `json:"groups"`
	NeverHitRuns  []CacheRun      `json:"never_hit_runs"`
	RunsTruncated bool            `json:"runs_truncated,omitempty"`
}

// CostReader is a Reader with the price catalog, for the figures that need
// prices or model facts (cache health). It embeds the Reader, so it also
// serves runs and costs.
type CostReader struct {
	*Reader
	catalog *pricing.Catalog
}

// NewCostReader returns a CostReader over reader using catalog.
func NewCostReader(reader *Reader, catalog *pricing.Catalog) *CostReader {
	return &CostReader{Reader: reader, catalog: catalog}
}

type prefixInfo struct {
	tokens    int
	source    string
	cacheable bool
}

// prefix returns the minimum cacheable prefix of a model.
func (c *CostReader) prefix(provider, model string, at time.Time, th CacheThresholds) prefixInfo {
	if n, ok := c.catalog.MinCachePrefix(provider, model, at); ok {
		return prefixInfo{n, PrefixFromCatalog, true}
	}
	if e, _, ok := c.catalog.Lookup(provider, model, at); ok && e.NoPromptCache {
		return prefixInfo{0, PrefixNoCache, false}
	}
	return prefixInfo{th.DefaultMinPrefixTokens, PrefixDefault, true}
}

// cacheCalls are the counted calls of one (agent, model) in one run, split
// by provider (a model name served by two providers is one group).
type cacheCalls struct {
	trace, agent, provider, model string
	stats                         CacheStats // Verdict and HitRatio unset
	first, last                   uint64     // start (ns) of the earliest and latest call
}

// Cache reports prompt-cache health per (agent, model) and per run over the
// filter's range. The agent is the span's own, else its nearest enclosing
// agent's, as in cost reports.
//
// ClickHouse sums the calls per (run, agent, provider, model) over the
// deduplicated inference spans with their own usage, with eligibility (input
// ≥ the model's minimum cacheable prefix, looked up in the catalog for each
// (provider, model) of the range first) computed in the query; Go merges
// those rows into groups, runs and verdicts. Only the runs with a counted
// call that carries no agent name are loaded span by span, to attribute the
// call to its nearest enclosing agent (see cacheCallsOfRuns).
func (c *CostReader) Cache(ctx context.Context, f CacheFilter) (CacheReport, error) {
	cf := CostFilter{Since: f.Since, Until: f.Until}.withDefaults(time.Now())
	th := f.Thresholds.withDefaults()
	if f.RunLimit <= 0 {
		f.RunLimit = 100
	}
	rep := CacheReport{Since: cf.Since, Until: cf.Until, Thresholds: th, Groups: []CacheGroup{}, NeverHitRuns: []CacheRun{}}
	w := Window{Project: f.Project, Since: cf.Since, Until: cf.Until}
	prefixes, err := c.cachePrefixes(ctx, w, f.Model, th)
	if err != nil {
		return CacheReport{}, err
	}
	if len(prefixes) == 0 {
		return rep, nil
	}
	rows, unnamed, err := c.cacheCallRows(ctx, w, f, prefixes)
	if err != nil {
		return CacheReport{}, err
	}
	if len(unnamed) > 0 {
		// Runs with calls that name no agent: attribute them span by span.
		attributed, err := c.cacheCallsOfRuns(ctx, w, unnamed, f.Model, prefixes, th)
		if err != nil {
			return CacheReport{}, err
		}
		kept := rows[:0]
		for _, r := range rows {
			if !unnamed[r.trace] {
				kept = append(kept, r)
			}
		}
		rows = append(kept, attributed...)
	}
	if f.Agent != "" {
		kept := rows[:0]
		for _, r := range rows {
			if r.agent == f.Agent {
				kept = append(kept, r)
			}
		}
		rows = kept
	}
	if err := c.judgeCache(ctx, w, &rep, rows, prefixes, th, f.RunLimit); err != nil {
		return CacheReport{}, err
	}
	return rep, nil
}

// pairKey is a (provider, model) pair.
type pairKey struct{ provider, model string }

// cachePrefix is a (provider, model)'s minimum cacheable prefix and its
// ClickHouse key (cityHash64(provider, model)).
type cachePrefix struct {
	prefixInfo
	key uint64
}

// cachePrefixes looks up the minimum cacheable prefix of every (provider,
// model) with counted calls in the window, at the time of its first call.
func (c *CostReader) cachePrefixes(ctx context.Context, w Window, model string, th CacheThresholds) (map[pairKey]cachePrefix, error) {
	where, args := w.where()
	if model != "" {
		where += " AND model = ?"
		args = append(args, model)
	}
	q := "SELECT provider, model, cityHash64(provider, model), min(start_ns) FROM " + c.store.Table(schema.TableSpanFacts) +
		" WHERE " + where + " AND span_type = 'inference' AND usage_mode NOT IN ('', 'aggregated') GROUP BY provider, model"
	rows, err := c.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("cache health models: %w", err)
	}
	defer rows.Close()
	out := map[pairKey]cachePrefix{}
	for rows.Next() {
		var k pairKey
		var p cachePrefix
		var first uint64
		if err := rows.Scan(&k.provider, &k.model, &p.key, &first); err != nil {
			return nil, fmt.Errorf("scan cache health model: %w", err)
		}
		p.prefixInfo = c.prefix(k.provider, k.model, nsTime(first), th)
		out[k] = p
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("cache health models: %w", err)
	}
	return out, nil
}

// eligibleFrom is the fewest input tokens that make a call of the prefix
// eligible; never for a model without prompt caching.
func (p prefixInfo) eligibleFrom() uint64 {
	if !p.cacheable {
		return math.MaxUint64
	}
	return uint64(p.tokens)
}

// cacheCallRows sums the window's counted inference calls per (run, agent,
// provider, model) in ClickHouse, and returns the runs with a call that names
// no agent. Spans are deduplicated with LIMIT 1 BY their identity: the rows
// of one span differ only in version and cost columns (a reprice), which
// this query does not read.
func (c *CostReader) cacheCallRows(ctx context.Context, w Window, f CacheFilter, prefixes map[pairKey]cachePrefix) ([]cacheCalls, map[string]bool, error) {
	where, args := w.where()
	if f.Model != "" {
		where += " AND model = ?"
		args = append(args, f.Model)
	}
	if f.Agent != "" {
		where += " AND agent_name IN (?, '')"
		args = append(args, f.Agent)
	}
	keys := make([]uint64, 0, len(prefixes))
	from := make([]uint64, 0, len(prefixes))
	for _, p := range prefixes {
		keys = append(keys, p.key)
		from = append(from, p.eligibleFrom())
	}
	// A pair first seen after cachePrefixes ran (a late span) counts as not
	// eligible until the next report.
	q := `SELECT trace_id, agent_name, provider, model, count(), countIf(elig),
	sum(input_tokens), sum(cache_read_tokens), sum(cache_write_tokens),
	sumIf(input_tokens, elig), sumIf(cache_read_tokens, elig), min(start_ns), max(start_ns)
FROM (
	SELECT trace_id, agent_name, provider, model, input_tokens, cache_read_tokens, cache_write_tokens, start_ns,
		input_tokens >= transform(cityHash64(provider, model), ?, ?, toUInt64(18446744073709551615)) AS elig
	FROM ` + c.store.Table(schema.TableSpanFacts) + `
	WHERE ` + where + ` AND span_type = 'inference' AND usage_mode NOT IN ('', 'aggregated')
	LIMIT 1 BY trace_id, span_id)
GROUP BY trace_id, agent_name, provider, model`
	rows, err := c.store.Conn().Query(ctx, q, append([]any{keys, from}, args...)...)
	if err != nil {
		return nil, nil, fmt.Errorf("cache health: %w", err)
	}
	defer rows.Close()
	var out []cacheCalls
	unnamed := map[string]bool{}
	for rows.Next() {
		var r cacheCalls
		s := &r.stats
		if err := rows.Scan(&r.trace, &r.agent, &r.provider, &r.model, &s.Calls, &s.EligibleCalls, &s.InputTokens,
			&s.CacheReadTokens, &s.CacheWriteTokens, &s.EligibleInputTokens, &s.EligibleCacheReadTokens,
			&r.first, &r.last); err != nil {
			return nil, nil, fmt.Errorf("scan cache health: %w", err)
		}
		if r.agent == "" {
			unnamed[r.trace] = true
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("cache health: %w", err)
	}
	return out, unnamed, nil
}

// maxListedRuns is the most run ids cacheCallsOfRuns lists in one query.
const maxListedRuns = 1000

// cacheCallsOfRuns attributes the spans of the given runs (loadRunSpans) and
// sums their counted calls in the window per (run, agent, provider, model),
// as cacheCallRows does.
func (c *CostReader) cacheCallsOfRuns(ctx context.Context, w Window, traces map[string]bool, model string,
	prefixes map[pairKey]cachePrefix, th CacheThresholds) ([]cacheCalls, error) {
	since, until := w.bounds()
	var spans []attributed
	var err error
	if len(traces) > maxListedRuns {
		// Most runs need attribution (an instrumentation that names the
		// agent only on agent spans): load the window's runs as cost
		// reports do, rather than list that many ids in a query.
		spans, err = c.loadSpans(ctx, w.Project, since, until, DefaultTraceWindow)
	} else {
		ids := make([]string, 0, len(traces))
		for t := range traces {
			ids = append(ids, t)
		}
		sort.Strings(ids)
		spans, err = c.loadRunSpans(ctx, w.Project, ids, since, until, DefaultTraceWindow)
	}
	if err != nil {
		return nil, err
	}
	type key struct{ trace, agent, provider, model string }
	byKey := map[key]*cacheCalls{}
	var order []key
	for i := range spans {
		a := &spans[i]
		if a.SpanType != schema.TypeInference || a.UsageMode == schema.UsageNone || a.UsageMode == schema.UsageAggregated ||
			!traces[a.TraceID] {
			continue
		}
		if model != "" && a.Model != model {
			continue
		}
		p, ok := prefixes[pairKey{a.Provider, a.Model}]
		if !ok {
			p.prefixInfo = c.prefix(a.Provider, a.Model, nsTime(a.StartNs), th)
		}
		k := key{a.TraceID, a.Agent, a.Provider, a.Model}
		r := byKey[k]
		if r == nil {
			r = &cacheCalls{trace: a.TraceID, agent: a.Agent, provider: a.Provider, model: a.Model, first: a.StartNs, last: a.StartNs}
			byKey[k] = r
			order = append(order, k)
		}
		r.stats.addCall(a.Usage, a.Usage.Input >= p.eligibleFrom())
		r.first, r.last = min(r.first, a.StartNs), max(r.last, a.StartNs)
	}
	out := make([]cacheCalls, 0, len(order))
	for _, k := range order {
		out = append(out, *byKey[k])
	}
	return out, nil
}

// add sums the calls of o into s.
func (s *CacheStats) add(o *CacheStats) {
	s.Calls += o.Calls
	s.EligibleCalls += o.EligibleCalls
	s.InputTokens += o.InputTokens
	s.CacheReadTokens += o.CacheReadTokens
	s.CacheWriteTokens += o.CacheWriteTokens
	s.EligibleInputTokens += o.EligibleInputTokens
	s.EligibleCacheReadTokens += o.EligibleCacheReadTokens
}

// judgeCache merges the rows into the report's groups and runs and judges
// them: groups worst first, never_hit runs with the most eligible calls
// first (at most runLimit, with their tasks), example runs of never_hit
// groups.
func (c *CostReader) judgeCache(ctx context.Context, w Window, rep *CacheReport, rows []cacheCalls,
	prefixes map[pairKey]cachePrefix, th CacheThresholds, runLimit int) error {
	type groupKey struct{ agent, model string }
	type groupAcc struct {
		group     CacheGroup
		first     uint64 // start of the earliest call: its provider names the group
		cacheable bool
		runs      map[string]*cacheCalls // the group's calls per run
	}
	type runAcc struct {
		run       CacheRun
		first     uint64
		agents    map[string]bool
		models    map[string]bool
		groups    map[groupKey]bool
		cacheable bool
	}
	groups := map[groupKey]*groupAcc{}
	runs := map[string]*runAcc{}
	for i := range rows {
		r := &rows[i]
		p := prefixes[pairKey{r.provider, r.model}].prefixInfo
		k := groupKey{r.agent, r.model}
		g := groups[k]
		if g == nil {
			g = &groupAcc{group: CacheGroup{Agent: r.agent, Model: r.model}, first: math.MaxUint64, runs: map[string]*cacheCalls{}}
			groups[k] = g
		}
		if r.first < g.first || (r.first == g.first && r.provider < g.group.Provider) {
			g.first, g.group.Provider = r.first, r.provider
			g.group.MinPrefixTokens, g.group.PrefixSource = p.tokens, p.source
		}
		g.group.add(&r.stats)
		g.cacheable = g.cacheable || p.cacheable
		gr := g.runs[r.trace]
		if gr == nil {
			gr = &cacheCalls{trace: r.trace}
			g.runs[r.trace] = gr
		}
		gr.stats.add(&r.stats)
		gr.last = max(gr.last, r.last)

		run := runs[r.trace]
		if run == nil {
			run = &runAcc{run: CacheRun{TraceID: r.trace}, first: math.MaxUint64,
				agents: map[string]bool{}, models: map[string]bool{}, groups: map[groupKey]bool{}}
			runs[r.trace] = run
		}
		run.run.add(&r.stats)
		run.first = min(run.first, r.first)
		if r.agent != "" {
			run.agents[r.agent] = true
		}
		run.models[r.model] = true
		run.groups[k] = true
		run.cacheable = run.cacheable || p.cacheable
	}
	for _, run := range runs {
		run.run.judge(th.MinEligibleRunCalls, run.cacheable)
		if run.run.Verdict != VerdictNeverHit {
			continue
		}
		for k := range run.groups {
			groups[k].group.NeverHitRuns++
		}
		run.run.Start = nsTime(run.first)
		run.run.Agents, run.run.Models = sortedKeys(run.agents), sortedKeys(run.models)
		rep.NeverHitRuns = append(rep.NeverHitRuns, run.run)
	}
	for _, g := range groups {
		g.group.judge(th.MinEligibleCalls, g.cacheable)
		g.group.ExampleRunIDs = []string{}
		if g.group.Verdict == VerdictNeverHit {
			var exs []example
			for _, gr := range g.runs {
				if gr.stats.EligibleCalls > 0 && gr.stats.CacheReadTokens == 0 {
					exs = append(exs, example{gr.trace, gr.last})
				}
			}
			sort.Slice(exs, func(i, j int) bool {
				if exs[i].start != exs[j].start {
					return exs[i].start > exs[j].start
				}
				return exs[i].trace < exs[j].trace
			})
			for _, e := range exs[:min(len(exs), CacheExampleRuns)] {
				g.group.ExampleRunIDs = append(g.group.ExampleRunIDs, e.trace)
			}
		}
		rep.Groups = append(rep.Groups, g.group)
	}
	sort.Slice(rep.Groups, func(i, j int) bool {
		a, b := rep.Groups[i], rep.Groups[j]
		if (a.Verdict == VerdictNeverHit) != (b.Verdict == VerdictNeverHit) {
			return a.Verdict == VerdictNeverHit
		}
		if a.EligibleCalls != b.EligibleCalls {
			return a.EligibleCalls > b.EligibleCalls
		}
		if a.Agent != b.Agent {
			return a.Agent < b.Agent
		}
		return a.Model < b.Model
	})
	sort.Slice(rep.NeverHitRuns, func(i, j int) bool {
		a, b := rep.NeverHitRuns[i], rep.NeverHitRuns[j]
		if a.EligibleCalls != b.EligibleCalls {
			return a.EligibleCalls > b.EligibleCalls
		}
		return a.TraceID < b.TraceID
	})
	if len(rep.NeverHitRuns) > runLimit {
		rep.NeverHitRuns, rep.RunsTruncated = rep.NeverHitRuns[:runLimit], true
	}
	return c.fillTasks(ctx, w, rep)
}

// fillTasks sets the task of the report's never_hit runs: task.name on any
// span of the run (the earliest carrying it), else the root span's name,
// else the earliest span's name, as attribution decides. Spans are read
// within DefaultTraceWindow of the window, as loadSpans reads them.
func (c *CostReader) fillTasks(ctx context.Context, w Window, rep *CacheReport) error {
	since, until := w.bounds()
	q := "SELECT trace_id, argMinIf(task_name, start_ns, task_name != ''), argMinIf(name, start_ns, parent_span_id = ''), argMin(name, start_ns)" +
		" FROM " + c.store.Table(schema.TableSpanFacts) +
		" WHERE project = ? AND trace_id IN ? AND start >= ? AND start <= ? GROUP BY trace_id"
	tasks := map[string]string{}
	for runs := range slices.Chunk(rep.NeverHitRuns, maxListedRuns) {
		ids := clickhouse.GroupSet{Value: make([]any, len(runs))}
		for i, r := range runs {
			ids.Value[i] = r.TraceID
		}
		if err := c.readTasks(ctx, q, []any{w.Project, ids, since.Add(-DefaultTraceWindow).Truncate(time.Second),
			until.Add(DefaultTraceWindow)}, tasks); err != nil {
			return err
		}
	}
	for i := range rep.NeverHitRuns {
		rep.NeverHitRuns[i].Task = tasks[rep.NeverHitRuns[i].TraceID]
	}
	return nil
}

// readTasks runs fillTasks' query and records each run's task in tasks.
func (c *CostReader) readTasks(ctx context.Context, q string, args []any, tasks map[string]string) error {
	rows, err := c.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("tasks of never_hit runs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var trace, task, root, first string
		if err := rows.Scan(&trace, &task, &root, &first); err != nil {
			return fmt.Errorf("scan task: %w", err)
		}
		switch {
		case task != "":
			tasks[trace] = task
		case root != "":
			tasks[trace] = root
		default:
			tasks[trace] = first
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("tasks of never_hit runs: %w", err)
	}
	return nil
}
