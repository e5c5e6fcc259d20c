package attribution

import (
	"math"
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

// WithDefaults returns t with its zero fields set to the defaults.
func (t CacheThresholds) WithDefaults() CacheThresholds {
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

// AddCall adds one call of usage u, eligible or not.
func (s *CacheStats) AddCall(u Usage, eligible bool) {
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

// Judge fills HitRatio and Verdict: insufficient_data without calls or
// when no call's model caches prompts; else healthy when any call read from
// the cache; else below_min_prefix when no call was eligible; else never_hit
// with at least minEligible eligible calls; else insufficient_data.
func (s *CacheStats) Judge(minEligible int, cacheable bool) {
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

// Add sums the calls of o into s.
func (s *CacheStats) Add(o *CacheStats) {
	s.Calls += o.Calls
	s.EligibleCalls += o.EligibleCalls
	s.InputTokens += o.InputTokens
	s.CacheReadTokens += o.CacheReadTokens
	s.CacheWriteTokens += o.CacheWriteTokens
	s.EligibleInputTokens += o.EligibleInputTokens
	s.EligibleCacheReadTokens += o.EligibleCacheReadTokens
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
	// RunsWithoutCacheRead counts, for a never_hit group, every run with an
	// eligible call of the group and no cache read by the group's calls —
	// the runs ExampleRunIDs lists the latest of (a run with one eligible
	// call is one of them, though too small to be judged never_hit alone).
	RunsWithoutCacheRead int `json:"runs_without_cache_read"`
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

// Prefix is a model's minimum cacheable prefix: the fewest input tokens
// (cache included) that prompt caching applies to.
type Prefix struct {
	Tokens    int
	Source    string // PrefixFromCatalog, PrefixDefault or PrefixNoCache
	Cacheable bool   // false: the provider has no prompt caching for the model
}

// LookupPrefix returns the minimum cacheable prefix of a model at time at:
// the catalog's, else none for a model the catalog says has no prompt
// caching, else th.DefaultMinPrefixTokens.
func LookupPrefix(catalog *pricing.Catalog, provider, model string, at time.Time, th CacheThresholds) Prefix {
	if n, ok := catalog.MinCachePrefix(provider, model, at); ok {
		return Prefix{n, PrefixFromCatalog, true}
	}
	if e, _, ok := catalog.Lookup(provider, model, at); ok && e.NoPromptCache {
		return Prefix{0, PrefixNoCache, false}
	}
	return Prefix{th.DefaultMinPrefixTokens, PrefixDefault, true}
}

// EligibleFrom is the fewest input tokens that make a call of the prefix
// eligible; never for a model without prompt caching.
func (p Prefix) EligibleFrom() uint64 {
	if !p.Cacheable {
		return math.MaxUint64
	}
	return uint64(p.Tokens)
}

// CacheCalls are the counted calls of one (agent, model) in one run, split
// by provider (a model name served by two providers is one group).
type CacheCalls struct {
	TraceID, Agent, Provider, Model string
	Stats                           CacheStats // Verdict and HitRatio unset
	FirstNs, LastNs                 uint64     // start of the earliest and latest call
}

// CacheCallsOf sums the counted inference calls (spans with their own
// usage) of the given runs among spans, of model only when it is not "", per
// (run, agent, provider, model), in the order the keys first appear.
// prefixOf returns the minimum cacheable prefix of a call's model; a call is
// eligible when its input reaches it.
func CacheCallsOf(spans []Attributed, traces map[string]bool, model string, prefixOf func(a *Attributed) Prefix) []CacheCalls {
	type key struct{ trace, agent, provider, model string }
	byKey := map[key]*CacheCalls{}
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
		p := prefixOf(a)
		k := key{a.TraceID, a.Agent, a.Provider, a.Model}
		r := byKey[k]
		if r == nil {
			r = &CacheCalls{TraceID: a.TraceID, Agent: a.Agent, Provider: a.Provider, Model: a.Model, FirstNs: a.StartNs, LastNs: a.StartNs}
			byKey[k] = r
			order = append(order, k)
		}
		r.Stats.AddCall(a.Usage, a.Usage.Input >= p.EligibleFrom())
		r.FirstNs, r.LastNs = min(r.FirstNs, a.StartNs), max(r.LastNs, a.StartNs)
	}
	out := make([]CacheCalls, 0, len(order))
	for _, k := range order {
		out = append(out, *byKey[k])
	}
	return out
}

// JudgeCache merges the rows into groups (one per agent and model) and runs
// and judges them: groups worst first (never_hit, then by eligible calls),
// with the example runs of never_hit groups; the runs judged never_hit with
// the most eligible calls first, at most runLimit (truncated says more were
// left out), their Task unset. prefixOf returns the minimum cacheable prefix
// of a (provider, model) of the rows.
func JudgeCache(rows []CacheCalls, prefixOf func(provider, model string) Prefix, th CacheThresholds, runLimit int) (
	groups []CacheGroup, neverHitRuns []CacheRun, truncated bool) {
	type groupKey struct{ agent, model string }
	type groupAcc struct {
		group     CacheGroup
		first     uint64 // start of the earliest call: its provider names the group
		cacheable bool
		runs      map[string]*CacheCalls // the group's calls per run
	}
	type runAcc struct {
		run       CacheRun
		first     uint64
		agents    map[string]bool
		models    map[string]bool
		groups    map[groupKey]bool
		cacheable bool
	}
	byGroup := map[groupKey]*groupAcc{}
	runs := map[string]*runAcc{}
	for i := range rows {
		r := &rows[i]
		p := prefixOf(r.Provider, r.Model)
		k := groupKey{r.Agent, r.Model}
		g := byGroup[k]
		if g == nil {
			g = &groupAcc{group: CacheGroup{Agent: r.Agent, Model: r.Model}, first: math.MaxUint64, runs: map[string]*CacheCalls{}}
			byGroup[k] = g
		}
		if r.FirstNs < g.first || (r.FirstNs == g.first && r.Provider < g.group.Provider) {
			g.first, g.group.Provider = r.FirstNs, r.Provider
			g.group.MinPrefixTokens, g.group.PrefixSource = p.Tokens, p.Source
		}
		g.group.Add(&r.Stats)
		g.cacheable = g.cacheable || p.Cacheable
		gr := g.runs[r.TraceID]
		if gr == nil {
			gr = &CacheCalls{TraceID: r.TraceID}
			g.runs[r.TraceID] = gr
		}
		gr.Stats.Add(&r.Stats)
		gr.LastNs = max(gr.LastNs, r.LastNs)

		run := runs[r.TraceID]
		if run == nil {
			run = &runAcc{run: CacheRun{TraceID: r.TraceID}, first: math.MaxUint64,
				agents: map[string]bool{}, models: map[string]bool{}, groups: map[groupKey]bool{}}
			runs[r.TraceID] = run
		}
		run.run.Add(&r.Stats)
		run.first = min(run.first, r.FirstNs)
		if r.Agent != "" {
			run.agents[r.Agent] = true
		}
		run.models[r.Model] = true
		run.groups[k] = true
		run.cacheable = run.cacheable || p.Cacheable
	}
	neverHitRuns = []CacheRun{}
	for _, run := range runs {
		run.run.Judge(th.MinEligibleRunCalls, run.cacheable)
		if run.run.Verdict != VerdictNeverHit {
			continue
		}
		for k := range run.groups {
			byGroup[k].group.NeverHitRuns++
		}
		run.run.Start = time.Unix(0, int64(run.first)).UTC()
		run.run.Agents, run.run.Models = sortedKeys(run.agents), sortedKeys(run.models)
		neverHitRuns = append(neverHitRuns, run.run)
	}
	groups = []CacheGroup{}
	for _, g := range byGroup {
		g.group.Judge(th.MinEligibleCalls, g.cacheable)
		g.group.ExampleRunIDs = []string{}
		if g.group.Verdict == VerdictNeverHit {
			type example struct {
				trace string
				start uint64
			}
			var exs []example
			for _, gr := range g.runs {
				if gr.Stats.EligibleCalls > 0 && gr.Stats.CacheReadTokens == 0 {
					exs = append(exs, example{gr.TraceID, gr.LastNs})
				}
			}
			g.group.RunsWithoutCacheRead = len(exs)
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
		groups = append(groups, g.group)
	}
	sort.Slice(groups, func(i, j int) bool {
		a, b := groups[i], groups[j]
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
	sort.Slice(neverHitRuns, func(i, j int) bool {
		a, b := neverHitRuns[i], neverHitRuns[j]
		if a.EligibleCalls != b.EligibleCalls {
			return a.EligibleCalls > b.EligibleCalls
		}
		return a.TraceID < b.TraceID
	})
	if len(neverHitRuns) > runLimit {
		neverHitRuns, truncated = neverHitRuns[:runLimit], true
	}
	return groups, neverHitRuns, truncated
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
