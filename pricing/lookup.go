package pricing

import (
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tallyhq/tally/schema"
)

// Lookup finds the entry that prices model, served by provider, at time at
// (zero: the newest prices). It returns the entry version in force at that
// time and its base prices (use Entry.PriceFor for a call's long-context
// tier); ok is false when no entry matches.
//
// A dated name (gpt-4o-2024-05-13) first looks for an entry of that
// snapshot (see Snapshot): a snapshot priced unlike its alias has one.
// Otherwise both names are normalized (see Normalize, which drops the date:
// the snapshot is priced as its alias, which ThroughAlias reports). Matching
// then tries, in order: an entry whose name or alias equals the model exactly; then the
// longest entry name that is a prefix of the model at a "-" boundary
// (gpt-4o-mini-2024-07-18 → gpt-4o-mini, never gpt-4o), unless what follows
// continues a version number (claude-opus-4-1 is not claude-opus-4). Among
// entries matching equally well, one whose provider equals the span's wins,
// else the first in catalog order. The name decides before the provider does,
// so an exact name under another provider beats a prefix under the span's.
func (c *Catalog) Lookup(provider, model string, at time.Time) (Entry, Price, bool) {
	g := c.match(provider, model)
	if g == nil {
		return Entry{}, Price{}, false
	}
	e := g.at(at)
	return e.clone(), e.Price, true
}

// CheaperCacheReads reports whether the model's entry in force at time at
// bills prompt-cache reads below fresh input, so that a cache-read count
// left unreported overstates the cost. A model the catalog does not know is
// taken to (no evidence that it does not).
func (c *Catalog) CheaperCacheReads(provider, model string, at time.Time) bool {
	g := c.match(provider, model)
	if g == nil {
		return true
	}
	p := g.at(at).Price
	return p.CacheRead < p.Input
}

// MinCachePrefix returns the minimum cacheable prompt length, in tokens, of
// the model's entry in force at time at. ok is false when no entry matches,
// when the model has no prompt caching, or when the entry does not say.
func (c *Catalog) MinCachePrefix(provider, model string, at time.Time) (int, bool) {
	g := c.match(provider, model)
	if g == nil {
		return 0, false
	}
	e := g.at(at)
	if e.NoPromptCache || e.MinCachePrefixTokens <= 0 {
		return 0, false
	}
	return e.MinCachePrefixTokens, true
}

// matchCache memoizes match: model names are few in practice, while
// normalizing one costs two regular expressions per span. It stops growing
// at maxCachedMatches entries so hostile input cannot grow it without bound.
type matchCache struct {
	m sync.Map // provider + "\x00" + model → matched
	n atomic.Int64
}

// matched is a memoized match: the group (nil: none) and whether the
// model is a dated snapshot priced through its alias (ThroughAlias), so
// that PriceNote costs ingest no second lookup.
type matched struct {
	g     *group
	alias bool
}

const maxCachedMatches = 4096

func (c *Catalog) match(provider, model string) *group { return c.lookup(provider, model).g }

// lookup is match with ThroughAlias, memoized together.
func (c *Catalog) lookup(provider, model string) matched {
	if c.matches == nil {
		return c.lookupUncached(provider, model)
	}
	key := provider + "\x00" + model
	if m, ok := c.matches.m.Load(key); ok {
		return m.(matched)
	}
	m := c.lookupUncached(provider, model)
	if c.matches.n.Load() < maxCachedMatches {
		if _, loaded := c.matches.m.LoadOrStore(key, m); !loaded {
			c.matches.n.Add(1)
		}
	}
	return m
}

func (c *Catalog) lookupUncached(provider, model string) matched {
	g := c.matchUncached(provider, model)
	return matched{g: g, alias: g != nil && c.ThroughAlias(model)}
}

func (c *Catalog) matchUncached(provider, model string) *group {
	if snap, dated := Snapshot(model); dated {
		if idx := c.bySnapshot[snap]; len(idx) > 0 {
			return c.pick(idx, normalizeProvider(provider))
		}
	}
	n := Normalize(model)
	if n == "" {
		return nil
	}
	p := normalizeProvider(provider)
	if idx := c.byName[n]; len(idx) > 0 {
		return c.pick(c.undatedFirst(idx), p)
	}
	for i := len(n) - 1; i > 0; i-- {
		if n[i] != '-' || continuesVersion(n[i+1:]) {
			continue
		}
		if idx := c.byName[n[:i]]; len(idx) > 0 {
			return c.pick(idx, p)
		}
	}
	return nil
}

// undatedFirst is idx without the snapshot entries when it has another:
// a name whose date was dropped (or that had none) is the alias's, not a
// snapshot's (which Snapshot matched first, if it had an entry).
func (c *Catalog) undatedFirst(idx []int) []int {
	var out []int
	for _, i := range idx {
		if !c.snapshots[i] {
			out = append(out, i)
		}
	}
	if len(out) == 0 {
		return idx
	}
	return out
}

// pick returns the first group of idx served by provider, else the first.
func (c *Catalog) pick(idx []int, provider string) *group {
	for _, i := range idx {
		if c.groups[i].provider == provider {
			return c.groups[i]
		}
	}
	return c.groups[idx[0]]
}

// Apply fills the span's cost fields from the catalog. It implements
// ingest.Pricer and may be called again on a stored span to reprice it.
//
// Spans whose cost the client sent (CostSource CostClient) and spans that
// repeat their children's usage (UsageMode UsageAggregated) are left
// untouched, as are spans without any usage. Otherwise the cost fields are
// recomputed: with the matching entry (CostSource CostCatalog, PriceEntry and
// PriceVersion set), or, when no entry matches, zero costs with CostSource
// CostUnpriced. The model priced is Model, else the response or request
// model; the time is the span's start.
//
// Input tokens are inclusive of cache reads and writes (schema.Span), so
// uncached input is Input − CacheRead − CacheWrite, floored at zero when the
// buckets do not reconcile (ingest flags those spans). Cache writes are priced
// at the 5-minute rate.
func (c *Catalog) Apply(s *schema.Span) {
	if s == nil || s.CostSource == schema.CostClient {
		return
	}
	if s.UsageMode == schema.UsageNone && s.InputTokens == 0 && s.OutputTokens == 0 &&
		s.CacheReadTokens == 0 && s.CacheWriteTokens == 0 {
		return
	}
	s.CostInput, s.CostCacheRead, s.CostCacheWrite, s.CostOutput, s.CostTotal = 0, 0, 0, 0, 0
	s.PriceEntry, s.PriceVersion = "", ""

	at := s.Start
	if at.IsZero() && s.StartNs > 0 {
		at = time.Unix(0, int64(s.StartNs)).UTC()
	}
	var g *group
	for _, model := range []string{s.Model, s.ResponseModel, s.RequestModel} {
		if g = c.match(s.Provider, model); g != nil {
			break
		}
	}
	if g == nil {
		s.CostSource = schema.CostUnpriced
		return
	}
	e := g.at(at)

	cached := s.CacheReadTokens + s.CacheWriteTokens
	allInput := max(s.InputTokens, cached)
	uncached := allInput - cached
	p := e.PriceFor(allInput)

	s.CostInput = tokenCost(uncached, p.Input)
	s.CostCacheRead = tokenCost(s.CacheReadTokens, p.CacheRead)
	s.CostCacheWrite = tokenCost(s.CacheWriteTokens, p.CacheWrite)
	s.CostOutput = tokenCost(s.OutputTokens, p.Output)
	s.CostTotal = s.CostInput + s.CostCacheRead + s.CostCacheWrite + s.CostOutput
	s.CostSource = schema.CostCatalog
	s.PriceEntry = e.ID
	s.PriceVersion = e.Version
}

// tokenCost is the USD cost of tokens at perMillion USD per million tokens.
func tokenCost(tokens uint64, perMillion float64) float64 {
	return float64(tokens) * perMillion / 1e6
}

// ExplainPrice spells out the cost arithmetic Apply performed on s, one line
// per bucket and the total, for explanations (ingest.Explain). It reads the
// span's stored buckets and price entry; an unpriced or client-priced span
// gets one line saying so.
func (c *Catalog) ExplainPrice(s *schema.Span) []string {
	switch s.CostSource {
	case schema.CostClient:
		return []string{fmt.Sprintf("client-sent cost %s USD", formatUSD(s.CostTotal))}
	case schema.CostUnpriced:
		return []string{fmt.Sprintf("no catalog entry for provider %q model %q", s.Provider, s.Model)}
	case schema.CostCatalog:
	default:
		return nil
	}
	at := s.Start
	if at.IsZero() && s.StartNs > 0 {
		at = time.Unix(0, int64(s.StartNs)).UTC()
	}
	var g *group
	for _, model := range []string{s.Model, s.ResponseModel, s.RequestModel} {
		if g = c.match(s.Provider, model); g != nil {
			break
		}
	}
	if g == nil {
		return []string{fmt.Sprintf("priced by %s version %s (no longer in the catalog)", s.PriceEntry, s.PriceVersion)}
	}
	e := g.at(at)
	cached := s.CacheReadTokens + s.CacheWriteTokens
	allInput := max(s.InputTokens, cached)
	p := e.PriceFor(allInput)
	lines := []string{fmt.Sprintf("catalog entry %s version %s (model %s), prices per million tokens", e.ID, e.Version, e.Model)}
	if note := c.PriceNote(s); note != "" {
		lines = append(lines, note)
	}
	if p != e.Price {
		lines = append(lines, fmt.Sprintf("long-context tier: %d input tokens is above the tier threshold, every token at the tier's prices", allInput))
	}
	line := func(what string, tokens uint64, perMillion float64) {
		lines = append(lines, fmt.Sprintf("%s %d × $%s/M = $%s", what, tokens, formatUSD(perMillion), formatUSD(tokenCost(tokens, perMillion))))
	}
	line("uncached input", allInput-cached, p.Input)
	line("cache read", s.CacheReadTokens, p.CacheRead)
	line("cache write", s.CacheWriteTokens, p.CacheWrite)
	line("output (reasoning included)", s.OutputTokens, p.Output)
	lines = append(lines, fmt.Sprintf("total $%s", formatUSD(s.CostTotal)))
	return lines
}

// formatUSD prints an amount without float noise (to 1e-12 USD).
func formatUSD(v float64) string {
	return strconv.FormatFloat(math.Round(v*1e12)/1e12, 'f', -1, 64)
}

// ThroughAlias reports whether model is a dated snapshot the catalog has no
// entry of, priced (when it is) as the undated model it pins: right when
// the provider prices the snapshot as its alias, which is why the catalog
// lists the snapshots that differ; worth saying either way.
func (c *Catalog) ThroughAlias(model string) bool {
	snap, dated := Snapshot(model)
	return dated && !c.named[snap]
}

// PriceNote says how a span priced from the catalog was matched when a
// user should know: a dated snapshot the catalog has no entry of, priced as
// the model it pins ("" otherwise). It implements ingest.PriceNoter; the
// note is stored on the span (tally.cost.note) and shown by explain.
func (c *Catalog) PriceNote(s *schema.Span) string {
	if s == nil || s.CostSource != schema.CostCatalog {
		return ""
	}
	for _, model := range []string{s.Model, s.ResponseModel, s.RequestModel} {
		m := c.lookup(s.Provider, model)
		if m.g == nil {
			continue
		}
		if !m.alias {
			return ""
		}
		return fmt.Sprintf("%s is a dated snapshot without a catalog entry: priced as %s (%s), its alias; "+
			"a snapshot the provider prices otherwise needs an entry of its own (--prices)", model, m.g.versions[0].Model, m.g.id)
	}
	return ""
}
