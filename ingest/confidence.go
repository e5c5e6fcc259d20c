package ingest

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/tallyhq/tally/schema"
)

// Confidence says how sure a span's cost is (schema.Confidence*) and, when
// it is not exact, which rule said so and why.
type Confidence struct {
	Level           string `json:"level"`
	Rule            string `json:"rule,omitempty"`
	Instrumentation string `json:"instrumentation,omitempty"`
	Reason          string `json:"reason,omitempty"`
	// Versions is the instrumentation's version range the rule holds for.
	Versions string `json:"versions,omitempty"`
	Source   string `json:"source,omitempty"`
}

// Gap is what an instrumentation leaves out of, or gets wrong in, the
// numbers a bill needs.
type Gap uint8

// The gaps.
const (
	// GapNoCacheRead: it never reports how much input came from the prompt
	// cache, so cache reads are billed at the full input price: an upper
	// bound, for a model whose cache reads are cheaper than input (and a
	// span whose cache-read count is 0).
	GapNoCacheRead Gap = iota + 1
	// GapOverCount: a known error that can only add tokens, by an amount
	// the span does not hold (so it cannot be undone): an upper bound.
	GapOverCount
	// GapNoReasoning: its output count leaves the reasoning (thinking)
	// tokens out and it never reports them: a lower bound (for a span with
	// no reasoning count).
	GapNoReasoning
	// GapCacheLeftOut: its input count leaves the prompt cache out and it
	// never reports the cache counts, so cached tokens are not billed at
	// all: a lower bound (for a span with no cache counts).
	GapCacheLeftOut
	// GapCorrected: a known, deterministic error that the span's reading
	// undoes (the reading of the rule's name made the correction).
	GapCorrected
)

// Level is the confidence a gap gives a cost.
func (g Gap) Level() string {
	switch g {
	case GapNoCacheRead, GapOverCount:
		return schema.ConfidenceUpperBound
	case GapNoReasoning, GapCacheLeftOut:
		return schema.ConfidenceLowerBound
	case GapCorrected:
		return schema.ConfidenceCorrected
	}
	return schema.ConfidenceExact
}

// ConfidenceRule is one instrumentation's known gap: which spans it covers
// (scope and versions, like a Reading, and the providers it matters for),
// what is missing, and where in the instrumentation's source that was read.
type ConfidenceRule struct {
	// Name is the stable identifier recorded on spans
	// (AttrCostConfidenceRule).
	Name string
	// Instrumentation names the package and language, for people.
	Instrumentation string
	// Scopes, MinVersion, BelowVersion and Versions select spans as a
	// Reading's do.
	Scopes                   []string
	MinVersion, BelowVersion string
	Versions                 VersionScheme
	// Providers limits the rule to spans of these providers (canonical
	// names); empty for any.
	Providers []string
	// Streaming limits the rule to spans that say they were streamed
	// (gen_ai.is_streaming or llm.is_streaming true).
	Streaming bool
	// Gap is what is missing or wrong.
	Gap Gap
	// Reason says it for people.
	Reason string
	// Source is where it was read: repository, file and commit.
	Source string
}

// versions renders the rule's version range.
func (r *ConfidenceRule) versions() string {
	var parts []string
	if r.MinVersion != "" {
		parts = append(parts, ">= "+r.MinVersion)
	}
	if r.BelowVersion != "" {
		parts = append(parts, "< "+r.BelowVersion)
	}
	if r.Versions != VersionsAny {
		parts = append(parts, r.Versions.String())
	}
	if len(parts) == 0 {
		return "every version"
	}
	return strings.Join(parts, ", ")
}

// selects reports whether the rule covers spans of identity id: its
// scope, versions and provider (the span's numbers aside).
func (r *ConfidenceRule) selects(id spanIdentity) bool {
	if len(r.Providers) > 0 && !slices.Contains(r.Providers, id.provider) {
		return false
	}
	match := Reading{Scopes: r.Scopes, MinVersion: r.MinVersion, BelowVersion: r.BelowVersion, Versions: r.Versions}
	return match.matches(id)
}

// shows reports whether span s shows the rule's gap: a cache-read count of
// 0 where reads would be cheaper; no reasoning count; no cache counts; the
// reading's correction made; for a streaming rule, a streamed span.
func (r *ConfidenceRule) shows(s *schema.Span, corrected string, streamed, cheaperReads func() bool) bool {
	if r.Streaming && !streamed() {
		return false
	}
	switch r.Gap {
	case GapNoCacheRead:
		return s.CacheReadTokens == 0 && cheaperReads()
	case GapOverCount:
		return true
	case GapNoReasoning:
		return s.ReasoningTokens == 0
	case GapCacheLeftOut:
		return s.CacheReadTokens == 0 && s.CacheWriteTokens == 0
	case GapCorrected:
		return corrected == r.Name
	}
	return false
}

// confidenceRules are the rules that select spans of identity id, resolved
// once per distinct identity in a request (as readings are): matching a
// scope's versions parses them, and most spans of a request share one.
func (n *normalizer) confidenceRules(id spanIdentity) []*ConfidenceRule {
	if rules, ok := n.selected[id]; ok {
		return rules
	}
	var rules []*ConfidenceRule
	for i := range n.confidence {
		if n.confidence[i].selects(id) {
			rules = append(rules, &n.confidence[i])
		}
	}
	if n.selected == nil {
		n.selected = make(map[spanIdentity][]*ConfidenceRule, 4)
	}
	n.selected[id] = rules
	return rules
}

// CacheReadPricer is a Pricer that knows whether a model's prompt-cache
// reads cost less than fresh input (*pricing.Catalog); without one, every
// model is taken to discount them.
type CacheReadPricer interface {
	CheaperCacheReads(provider, model string, at time.Time) bool
}

// rate sets out.CostConfidence from its cost source and the confidence
// rules, and records the rule (AttrCostConfidenceRule).
func (n *normalizer) rate(out *schema.Span, ex *Explanation) {
	switch out.CostSource {
	case schema.CostNone:
		return
	case schema.CostUnpriced:
		out.CostConfidence = schema.ConfidenceUnpriced
		if ex != nil {
			ex.Confidence = &Confidence{Level: schema.ConfidenceUnpriced, Reason: "no price: the span's cost is left out of every total"}
		}
		return
	}
	id := spanIdentity{scope: out.ScopeName, version: out.ScopeVersion, provider: out.Provider, name: out.Name, model: out.Model}
	var upper, lower, corrected *ConfidenceRule
	if rules := n.confidenceRules(id); len(rules) > 0 {
		cheaper := func() bool {
			cp, ok := n.opts.Pricer.(CacheReadPricer)
			return !ok || cp.CheaperCacheReads(out.Provider, out.Model, out.Start)
		}
		streamed := func() bool {
			fd, ok := n.first(fIsStreaming, fLLMStreaming)
			return ok && strings.EqualFold(n.text(fd.h), "true")
		}
		for _, r := range rules {
			if !r.shows(out, n.corrected, streamed, cheaper) {
				continue
			}
			switch r.Gap.Level() {
			case schema.ConfidenceUpperBound:
				upper = cmp.Or(upper, r)
			case schema.ConfidenceLowerBound:
				lower = cmp.Or(lower, r)
			case schema.ConfidenceCorrected:
				corrected = cmp.Or(corrected, r)
			}
		}
	}
	level, rated := schema.ConfidenceExact, []*ConfidenceRule(nil)
	switch {
	case upper != nil && lower != nil:
		level, rated = schema.ConfidenceApproximate, []*ConfidenceRule{upper, lower}
	case upper != nil:
		level, rated = schema.ConfidenceUpperBound, []*ConfidenceRule{upper}
	case lower != nil:
		level, rated = schema.ConfidenceLowerBound, []*ConfidenceRule{lower}
	case corrected != nil:
		level, rated = schema.ConfidenceCorrected, []*ConfidenceRule{corrected}
	}
	out.CostConfidence = level
	for _, r := range rated {
		n.note(AttrCostConfidenceRule, r.Name)
	}
	if ex == nil {
		return
	}
	// Two rules (approximate) read as one, each part joined by "; ".
	var names, instrumentations, reasons, versions, sources []string
	if out.CostSource == schema.CostClient {
		reasons = append(reasons, "the client's own cost, from the usage it read")
	}
	for _, r := range rated {
		d := r.Describe()
		names, instrumentations, reasons = append(names, d.Rule), append(instrumentations, d.Instrumentation), append(reasons, d.Reason)
		versions, sources = append(versions, d.Versions), append(sources, d.Source)
	}
	ex.Confidence = &Confidence{Level: level, Rule: strings.Join(names, "; "), Instrumentation: strings.Join(instrumentations, "; "),
		Reason: strings.Join(reasons, "; "), Versions: strings.Join(versions, "; "), Source: strings.Join(sources, "; ")}
	if len(rated) > 0 {
		ex.step("confidence: %s (%s)", level, ex.Confidence.Reason)
	}
}

// Describe is the rule as a Confidence, for people.
func (r *ConfidenceRule) Describe() Confidence {
	return Confidence{Level: r.Gap.Level(), Rule: r.Name, Instrumentation: r.Instrumentation, Reason: r.Reason,
		Versions: r.versions(), Source: r.Source}
}

// ConfidenceRuleNamed returns the rule of that name.
func ConfidenceRuleNamed(name string) (ConfidenceRule, bool) {
	for _, r := range ConfidenceRules() {
		if r.Name == name {
			return r, true
		}
	}
	return ConfidenceRule{}, false
}

// usageRecord is 1 when out records the usage of a call another span made
// and is not a call itself: a Logfire log record (logfire.span_type "log")
// of an inference. Logfire's streaming instrumentation ends the request
// span ("Chat Completion with …", "Message with …") when the stream is
// returned, without usage, and once the stream is consumed logs
// "streaming response from … took …s" with the call's attributes, usage and
// cost (record_streaming, pydantic/logfire
// logfire/_internal/integrations/llm_providers/llm_provider.py @e484a6b5;
// usage on the log since 4.31.1, #1846 and #1850; in the request's context,
// a sibling of the request span, since 4.17.0, #1566).
func (n *normalizer) usageRecord(out *schema.Span, ex *Explanation) uint8 {
	if out.SpanType != schema.TypeInference {
		return 0
	}
	fd, ok := n.first(fLogfireType)
	if !ok || n.text(fd.h) != "log" {
		return 0
	}
	ex.step("a Logfire log of a call (logfire.span_type = log): it records a streamed call's usage; the request span beside it and it are one call")
	return 1
}
