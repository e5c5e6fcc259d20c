package query

import (
	"context"
	"sort"
	"time"

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
	// NeverHitRuns counts the group's runs judged never_hit on their own.
	NeverHitRuns int `json:"never_hit_runs"`
}

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

// Cache reports prompt-cache health per (agent, model) and per run over the
// filter's range. The agent is the span's own, else its nearest enclosing
// agent's, as in cost reports.
func (c *CostReader) Cache(ctx context.Context, f CacheFilter) (CacheReport, error) {
	cf := CostFilter{Since: f.Since, Until: f.Until}.withDefaults(time.Now())
	th := f.Thresholds.withDefaults()
	if f.RunLimit <= 0 {
		f.RunLimit = 100
	}
	rep := CacheReport{Since: cf.Since, Until: cf.Until, Thresholds: th, Groups: []CacheGroup{}, NeverHitRuns: []CacheRun{}}
	spans, err := c.loadSpans(ctx, f.Project, cf.Since, cf.Until, DefaultTraceWindow)
	if err != nil {
		return CacheReport{}, err
	}
	type groupKey struct{ agent, model string }
	type runAcc struct {
		run       CacheRun
		agents    map[string]bool
		models    map[string]bool
		groups    map[groupKey]bool
		cacheable bool
	}
	groups := map[groupKey]*CacheGroup{}
	groupCacheable := map[groupKey]bool{}
	runs := map[string]*runAcc{}
	var runOrder []string
	prefixes := map[string]prefixInfo{}
	for i := range spans {
		a := &spans[i]
		if a.SpanType != schema.TypeInference || a.UsageMode == schema.UsageNone || a.UsageMode == schema.UsageAggregated {
			continue
		}
		if (f.Agent != "" && a.Agent != f.Agent) || (f.Model != "" && a.Model != f.Model) {
			continue
		}
		pk := a.Provider + "\x00" + a.Model
		p, ok := prefixes[pk]
		if !ok {
			p = c.prefix(a.Provider, a.Model, nsTime(a.StartNs), th)
			prefixes[pk] = p
		}
		eligible := p.cacheable && a.Usage.Input >= uint64(p.tokens)
		k := groupKey{a.Agent, a.Model}
		g := groups[k]
		if g == nil {
			g = &CacheGroup{Agent: a.Agent, Model: a.Model, Provider: a.Provider, MinPrefixTokens: p.tokens, PrefixSource: p.source}
			groups[k] = g
		}
		g.addCall(a.Usage, eligible)
		groupCacheable[k] = groupCacheable[k] || p.cacheable
		runID := a.Project + "\x00" + a.TraceID
		r := runs[runID]
		if r == nil {
			r = &runAcc{run: CacheRun{TraceID: a.TraceID, Task: a.Task, Start: nsTime(a.StartNs)},
				agents: map[string]bool{}, models: map[string]bool{}, groups: map[groupKey]bool{}}
			runs[runID] = r
			runOrder = append(runOrder, runID)
		}
		r.run.addCall(a.Usage, eligible)
		if a.Agent != "" {
			r.agents[a.Agent] = true
		}
		r.models[a.Model] = true
		r.groups[k] = true
		r.cacheable = r.cacheable || p.cacheable
		if t := nsTime(a.StartNs); t.Before(r.run.Start) {
			r.run.Start = t
		}
	}
	for _, id := range runOrder {
		r := runs[id]
		r.run.judge(th.MinEligibleRunCalls, r.cacheable)
		if r.run.Verdict != VerdictNeverHit {
			continue
		}
		for k := range r.groups {
			groups[k].NeverHitRuns++
		}
		r.run.Agents, r.run.Models = sortedKeys(r.agents), sortedKeys(r.models)
		rep.NeverHitRuns = append(rep.NeverHitRuns, r.run)
	}
	for k, g := range groups {
		g.judge(th.MinEligibleCalls, groupCacheable[k])
		rep.Groups = append(rep.Groups, *g)
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
	if len(rep.NeverHitRuns) > f.RunLimit {
		rep.NeverHitRuns, rep.RunsTruncated = rep.NeverHitRuns[:f.RunLimit], true
	}
	return rep, nil
}
