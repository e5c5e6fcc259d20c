package query

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/tallyhq/tally/attribution"
	"github.com/tallyhq/tally/pricing"
	"github.com/tallyhq/tally/schema"
)

// CacheFilter selects a cache health report. The report reads raw spans
// (deduplicated) over the range, so keep it to days, not months.
type CacheFilter struct {
	Project      string
	Since, Until time.Time // zero Until: now; zero Since: Until − 24h
	Agent, Model string    // "" for all
	Thresholds   attribution.CacheThresholds
	RunLimit     int // never_hit runs listed, at most; default 100
}

// CacheReport is the answer to a CacheFilter: groups worst first (never_hit,
// then by eligible calls), and the runs judged never_hit, most eligible calls
// first, for an engineer to open.
type CacheReport struct {
	Since         time.Time                   `json:"since"`
	Until         time.Time                   `json:"until"`
	Thresholds    attribution.CacheThresholds `json:"thresholds"`
	Groups        []attribution.CacheGroup    `json:"groups"`
	NeverHitRuns  []attribution.CacheRun      `json:"never_hit_runs"`
	RunsTruncated bool                        `json:"runs_truncated,omitempty"`
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

// Cache reports prompt-cache health per (agent, model) and per run over the
// filter's range. The agent is the span's own, else its nearest enclosing
// agent's, as in cost reports.
//
// ClickHouse sums the calls per (run, agent, provider, model) over the
// deduplicated inference spans with their own usage, with eligibility (input
// ≥ the model's minimum cacheable prefix, looked up in the catalog for each
// (provider, model) of the range first) computed in the query; attribution.JudgeCache
// merges those rows into groups, runs and verdicts. Only the runs with a counted
// call that carries no agent name are loaded span by span, to attribute the
// call to its nearest enclosing agent (see cacheCallsOfRuns).
func (c *CostReader) Cache(ctx context.Context, f CacheFilter) (CacheReport, error) {
	cf := CostFilter{Since: f.Since, Until: f.Until}.withDefaults(time.Now())
	th := f.Thresholds.WithDefaults()
	if f.RunLimit <= 0 {
		f.RunLimit = 100
	}
	rep := CacheReport{Since: cf.Since, Until: cf.Until, Thresholds: th, Groups: []attribution.CacheGroup{}, NeverHitRuns: []attribution.CacheRun{}}
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
			if !unnamed[r.TraceID] {
				kept = append(kept, r)
			}
		}
		rows = append(kept, attributed...)
	}
	if f.Agent != "" {
		kept := rows[:0]
		for _, r := range rows {
			if r.Agent == f.Agent {
				kept = append(kept, r)
			}
		}
		rows = kept
	}
	prefixOf := func(provider, model string) attribution.Prefix { return prefixes[pairKey{provider, model}].Prefix }
	rep.Groups, rep.NeverHitRuns, rep.RunsTruncated = attribution.JudgeCache(rows, prefixOf, th, f.RunLimit)
	if err := c.fillTasks(ctx, w, &rep); err != nil {
		return CacheReport{}, err
	}
	return rep, nil
}

// pairKey is a (provider, model) pair.
type pairKey struct{ provider, model string }

// cachePrefix is a (provider, model)'s minimum cacheable prefix and its
// ClickHouse key (cityHash64(provider, model)).
type cachePrefix struct {
	attribution.Prefix
	key uint64
}

// cachePrefixes looks up the minimum cacheable prefix of every (provider,
// model) with counted calls in the window, at the time of its first call.
func (c *CostReader) cachePrefixes(ctx context.Context, w Window, model string, th attribution.CacheThresholds) (map[pairKey]cachePrefix, error) {
	q, args := cachePrefixesSQL(c.store, w, model)
	rows, err := c.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("cache health models: %w", err)
	}
	type row struct {
		pair  pairKey
		key   uint64
		first uint64
	}
	models, err := scanAll(rows, func(x *row) []any { return []any{&x.pair.provider, &x.pair.model, &x.key, &x.first} })
	if err != nil {
		return nil, fmt.Errorf("cache health models: %w", err)
	}
	out := make(map[pairKey]cachePrefix, len(models))
	for _, m := range models {
		out[m.pair] = cachePrefix{attribution.LookupPrefix(c.catalog, m.pair.provider, m.pair.model, nsTime(m.first), th), m.key}
	}
	return out, nil
}

// cachePrefixesSQL builds cachePrefixes' statement: the (provider, model)
// pairs with counted calls in the window (of model only, when set), with
// their key and first call.
func cachePrefixesSQL(t tables, w Window, model string) (string, []any) {
	where, args := w.where()
	if model != "" {
		where += " AND model = ?"
		args = append(args, model)
	}
	q := "SELECT provider, model, cityHash64(provider, model), min(start_ns) FROM " + t.Table(schema.TableSpanFacts) +
		" WHERE " + where + " AND span_type = 'inference' AND usage_mode NOT IN ('', 'aggregated') GROUP BY provider, model"
	return q, args
}

// cacheCallRows sums the window's counted inference calls per (run, agent,
// provider, model) in ClickHouse, and returns the runs with a call that names
// no agent. Spans are deduplicated with LIMIT 1 BY their identity: the rows
// of one span differ only in version and cost columns (a reprice), which
// this query does not read.
func (c *CostReader) cacheCallRows(ctx context.Context, w Window, f CacheFilter, prefixes map[pairKey]cachePrefix) ([]attribution.CacheCalls, map[string]bool, error) {
	keys := make([]uint64, 0, len(prefixes))
	from := make([]uint64, 0, len(prefixes))
	for _, p := range prefixes {
		keys = append(keys, p.key)
		from = append(from, p.EligibleFrom())
	}
	q, args := cacheCallRowsSQL(c.store, w, f, keys, from)
	rows, err := c.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, nil, fmt.Errorf("cache health: %w", err)
	}
	out, err := scanAll(rows, func(r *attribution.CacheCalls) []any {
		s := &r.Stats
		return []any{&r.TraceID, &r.Agent, &r.Provider, &r.Model, &s.Calls, &s.EligibleCalls, &s.InputTokens,
			&s.CacheReadTokens, &s.CacheWriteTokens, &s.EligibleInputTokens, &s.EligibleCacheReadTokens,
			&r.FirstNs, &r.LastNs}
	})
	if err != nil {
		return nil, nil, fmt.Errorf("cache health: %w", err)
	}
	unnamed := map[string]bool{}
	for _, r := range out {
		if r.Agent == "" {
			unnamed[r.TraceID] = true
		}
	}
	return out, unnamed, nil
}

// cacheCallRowsSQL builds cacheCallRows' statement over the window's
// calls (of f's model and agent, when set); keys are the cachePrefix keys
// of the pairs and from their EligibleFrom, in the same order.
func cacheCallRowsSQL(t tables, w Window, f CacheFilter, keys, from []uint64) (string, []any) {
	where, args := w.where()
	if f.Model != "" {
		where += " AND model = ?"
		args = append(args, f.Model)
	}
	if f.Agent != "" {
		where += " AND agent_name IN (?, '')"
		args = append(args, f.Agent)
	}
	// A pair first seen after cachePrefixes ran (a late span) counts as not
	// eligible until the next report.
	q := `SELECT trace_id, agent_name, provider, model, count(), countIf(elig),
	sum(input_tokens), sum(cache_read_tokens), sum(cache_write_tokens),
	sumIf(input_tokens, elig), sumIf(cache_read_tokens, elig), min(start_ns), max(start_ns)
FROM (
	SELECT trace_id, agent_name, provider, model, input_tokens, cache_read_tokens, cache_write_tokens, start_ns,
		input_tokens >= transform(cityHash64(provider, model), ?, ?, toUInt64(18446744073709551615)) AS elig
	FROM ` + t.Table(schema.TableSpanFacts) + `
	WHERE ` + where + ` AND span_type = 'inference' AND usage_mode NOT IN ('', 'aggregated')
	` + onePerSpan + `)
GROUP BY trace_id, agent_name, provider, model`
	return q, append([]any{keys, from}, args...)
}

// maxListedRuns is the most run ids cacheCallsOfRuns lists in one query.
const maxListedRuns = 1000

// cacheCallsOfRuns attributes the spans of the given runs (loadRunSpans) and
// sums their counted calls in the window per (run, agent, provider, model)
// (attribution.CacheCallsOf), as cacheCallRows does.
func (c *CostReader) cacheCallsOfRuns(ctx context.Context, w Window, traces map[string]bool, model string,
	prefixes map[pairKey]cachePrefix, th attribution.CacheThresholds) ([]attribution.CacheCalls, error) {
	since, until := w.bounds()
	var spans []attribution.Attributed
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
	return attribution.CacheCallsOf(spans, traces, model, func(a *attribution.Attributed) attribution.Prefix {
		if p, ok := prefixes[pairKey{a.Provider, a.Model}]; ok {
			return p.Prefix
		}
		return attribution.LookupPrefix(c.catalog, a.Provider, a.Model, nsTime(a.StartNs), th)
	}), nil
}

// fillTasks sets the task of the report's never_hit runs: task.name on any
// span of the run (the earliest carrying it), else the root span's name,
// else the earliest span's name, as attribution decides. Spans are read
// within DefaultTraceWindow of the window, as loadSpans reads them.
func (c *CostReader) fillTasks(ctx context.Context, w Window, rep *CacheReport) error {
	since, until := w.bounds()
	tasks := map[string]string{}
	for runs := range slices.Chunk(rep.NeverHitRuns, maxListedRuns) {
		ids := clickhouse.GroupSet{Value: make([]any, len(runs))}
		for i, r := range runs {
			ids.Value[i] = r.TraceID
		}
		q, args := fillTasksSQL(c.store, w.Project, ids, since, until)
		if err := c.readTasks(ctx, q, args, tasks); err != nil {
			return err
		}
	}
	for i := range rep.NeverHitRuns {
		rep.NeverHitRuns[i].Task = tasks[rep.NeverHitRuns[i].TraceID]
	}
	return nil
}

// fillTasksSQL builds fillTasks' statement for the runs ids of a window
// [since, until): per run, its task.name, root name and earliest name,
// from its spans within DefaultTraceWindow of the window.
func fillTasksSQL(t tables, project string, ids clickhouse.GroupSet, since, until time.Time) (string, []any) {
	q := "SELECT trace_id, argMinIf(task_name, start_ns, task_name != ''), argMinIf(name, start_ns, parent_span_id = ''), argMin(name, start_ns)" +
		" FROM " + t.Table(schema.TableSpanFacts) +
		" WHERE project = ? AND trace_id IN ? AND start >= ? AND start <= ? GROUP BY trace_id"
	return q, []any{project, ids, since.Add(-DefaultTraceWindow).Truncate(time.Second), until.Add(DefaultTraceWindow)}
}

// readTasks runs fillTasks' query and records each run's task in tasks.
func (c *CostReader) readTasks(ctx context.Context, q string, args []any, tasks map[string]string) error {
	rows, err := c.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("tasks of never_hit runs: %w", err)
	}
	type row struct{ trace, task, root, first string }
	runs, err := scanAll(rows, func(x *row) []any { return []any{&x.trace, &x.task, &x.root, &x.first} })
	if err != nil {
		return fmt.Errorf("tasks of never_hit runs: %w", err)
	}
	for _, x := range runs {
		switch {
		case x.task != "":
			tasks[x.trace] = x.task
		case x.root != "":
			tasks[x.trace] = x.root
		default:
			tasks[x.trace] = x.first
		}
	}
	return nil
}
