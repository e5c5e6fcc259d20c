package ingest

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"time"

	"github.com/tallyhq/tally/ingest/wire"

	"github.com/tallyhq/tally/schema"
)

// Attribute keys tally adds to a span to record how its usage and cost were
// derived. They are rewritten whenever the span is re-derived.
const (
	// AttrUsageReading names the Reading that applied (Reading.Name, or
	// ProviderDefault).
	AttrUsageReading = "tally.usage.reading"
	// AttrUsageProblem says why the usage is marked unreconciled, when a
	// reason is known.
	AttrUsageProblem = "tally.usage.problem"
	// AttrCostNote says when a client-sent cost was not taken (a cost of
	// exactly 0 on a span with usage means the client had no price).
	AttrCostNote = "tally.cost.note"
	// AttrCostConfidenceRule names the ConfidenceRule that rated the span's
	// cost other than exact (Span.CostConfidence holds the rating).
	AttrCostConfidenceRule = "tally.cost.confidence_rule"
)

// derivedKeys are the attributes derive writes; the same keys sent by a
// client are dropped, so a span cannot claim a reading it did not get.
var derivedKeys = [...]string{AttrUsageReading, AttrUsageProblem, AttrCostNote, AttrCostConfidenceRule}

// PriceNoter is a Pricer that says, for a span it priced, what a user
// should know about how (*pricing.Catalog: a dated snapshot priced as its
// alias); the note is stored as AttrCostNote.
type PriceNoter interface {
	Pricer
	PriceNote(s *schema.Span) string
}

// PriceExplainer is a Pricer that can also spell out the arithmetic of the
// cost it put on a span; package pricing's catalog implements it.
type PriceExplainer interface {
	Pricer
	ExplainPrice(s *schema.Span) []string
}

// Reported is one usage or cost attribute as the span carried it.
type Reported struct {
	Key   string `json:"key"`
	Value string `json:"value"`
	// OnResource is true when the value came from the resource attributes.
	OnResource bool `json:"on_resource,omitempty"`
}

// Explanation says how a span's stored usage and cost were derived from
// what it reported: which instrumentation reading applied and why, each
// step of the arithmetic, and the price entry. It is computed again from the
// stored span with the current rules (Explain), so for a span stored under
// older rules it also shows what a re-derivation would change.
type Explanation struct {
	Reading         string     `json:"reading"`
	Instrumentation string     `json:"instrumentation,omitempty"`
	Source          string     `json:"source,omitempty"`
	Scope           string     `json:"scope,omitempty"`
	ScopeVersion    string     `json:"scope_version,omitempty"`
	Provider        string     `json:"provider,omitempty"`
	Model           string     `json:"model,omitempty"`
	SpanType        string     `json:"span_type"`
	Reported        []Reported `json:"reported"`
	// Reconstructed is true when the span was stored before tally kept the
	// reported values: they were rebuilt from the stored buckets.
	Reconstructed bool     `json:"reconstructed,omitempty"`
	Steps         []string `json:"steps"`
	Usage         Buckets  `json:"usage"`
	UsageMode     string   `json:"usage_mode"`
	Unreconciled  bool     `json:"unreconciled,omitempty"`
	CostSource    string   `json:"cost_source,omitempty"`
	PriceEntry    string   `json:"price_entry,omitempty"`
	PriceVersion  string   `json:"price_version,omitempty"`
	CostLines     []string `json:"cost_lines,omitempty"`
	CostUSD       float64  `json:"cost_usd"`
	// Confidence says how sure the cost is (schema.Confidence*), with the
	// rule that rated it when not exact.
	Confidence *Confidence `json:"confidence,omitempty"`
	// UsageRecord is true when the span records the usage of a call another
	// span made (it is not a call itself).
	UsageRecord bool `json:"usage_record,omitempty"`
	// Stored is what the span holds now, when it differs from what the
	// current rules derive (a reprice would change it).
	Stored *Buckets `json:"stored,omitempty"`
	// StoredCostUSD is the stored cost when it differs.
	StoredCostUSD *float64 `json:"stored_cost_usd,omitempty"`
}

// Buckets are a span's stored usage buckets.
type Buckets struct {
	Input      uint64 `json:"input_tokens"`
	CacheRead  uint64 `json:"cache_read_tokens"`
	CacheWrite uint64 `json:"cache_write_tokens"`
	Output     uint64 `json:"output_tokens"`
	Reasoning  uint64 `json:"reasoning_tokens"`
}

func bucketsOf(s *schema.Span) Buckets {
	return Buckets{s.InputTokens, s.CacheReadTokens, s.CacheWriteTokens, s.OutputTokens, s.ReasoningTokens}
}

// step appends a line to ex when explaining. A call with arguments is
// made under ex != nil: it boxes them (an allocation each) even when ex is
// nil, and Normalize runs it for every span it does not explain.
func (ex *Explanation) step(format string, args ...any) {
	if ex != nil {
		ex.Steps = append(ex.Steps, fmt.Sprintf(format, args...))
	}
}

// derive reads out's usage with its instrumentation's reading and fills the
// usage and cost fields, recording the reading in n.notes. ex, when not nil,
// receives the explanation.
func (n *normalizer) derive(out *schema.Span, ex *Explanation) {
	n.notes = n.notes[:0]
	n.corrected = ""
	out.InputTokens, out.CacheReadTokens, out.CacheWriteTokens, out.OutputTokens, out.ReasoningTokens = 0, 0, 0, 0, 0
	out.UsageMode, out.UsageUnreconciled = schema.UsageNone, 0
	out.CostInput, out.CostCacheRead, out.CostCacheWrite, out.CostOutput, out.CostTotal = 0, 0, 0, 0, 0
	out.CostSource, out.PriceEntry, out.PriceVersion = schema.CostNone, "", ""
	out.UsageRecord, out.CostConfidence = 0, ""

	var c tokenCounts
	var inputField field
	read := func(chain []field, winner *field) uint64 {
		fd, ok := n.firstNumber(chain...)
		if !ok {
			return 0
		}
		c.any = true
		if winner != nil {
			*winner = fd.f
		}
		v, ok := tokenValue(fd.h.v)
		if !ok {
			c.malformed = true
			if ex != nil {
				ex.step("%s = %q is not a token count: counted as 0", fd.h.key, valueText(fd.h.v, &n.scratch))
			}
			return 0
		}
		return v
	}
	outputWithoutReasoning := false
	in, outc, cr, cw, rs := inputChain(), outputChain(), cacheReadChain(), cacheWriteChain(), reasoningChain()
	c.input = read(in[:], &inputField)
	c.hasInput = c.any
	c.output = read(outc[:], nil)
	c.cacheRead = read(cr[:], nil)
	c.cacheWrite = read(cw[:], nil)
	c.reasoning = read(rs[:], nil)
	// Totals are evidence, not buckets: they never make a span report usage.
	var totalsBuf [2]reportedTotal
	totals := totalsBuf[:0]
	tc := totalChain()
	if fd, ok := n.firstNumber(tc[:]...); ok {
		if v, ok := tokenValue(fd.h.v); ok {
			totals = append(totals, reportedTotal{n: v, key: fd.h.key})
		} else if ex != nil {
			ex.step("%s = %q is not a token count: not used", fd.h.key, valueText(fd.h.v, &n.scratch))
		}
	}
	if fd, ok := n.firstNumber(fAINoCache); ok {
		if v, ok := tokenValue(fd.h.v); ok {
			c.noCache, c.hasNoCache, c.any = v, true, true
			inputField = fAINoCache
		}
	}
	if raw, ok := n.rawUsage(); ok {
		fill := func(name string, dst *uint64, v uint64) {
			if *dst == 0 && v > 0 {
				*dst, c.any = v, true
				if ex != nil {
					ex.step("%s %d read from %s (the provider's usage object; the span has no key of its own for it)", name, v, raw.source)
				}
			}
		}
		if raw.hasUncached && !c.hasNoCache {
			// Anthropic's and Bedrock's usage objects count input without
			// cache: that says outright what the uncached part is.
			c.noCache, c.hasNoCache, c.any = raw.uncached, true, true
			if ex != nil {
				ex.step("uncached input %d read from %s (the provider's own usage object)", raw.uncached, raw.source)
			}
		}
		if raw.hasTotal {
			totals = append(totals, reportedTotal{n: raw.total, key: raw.totalKey, in: raw.source})
		}
		fill("cache read", &c.cacheRead, raw.cacheRead)
		fill("cache write", &c.cacheWrite, raw.cacheWrite)
		fill("reasoning", &c.reasoning, raw.reasoning)
		if raw.hasCandidates && c.reasoning > 0 && c.output == raw.candidates {
			// Gemini's candidatesTokenCount leaves thoughts out; an output
			// equal to it was reported without reasoning (Vercel AI SDK 5).
			outputWithoutReasoning = true
			if ex != nil {
				ex.step("output %d equals Gemini's candidatesTokenCount in %s: reasoning is not part of it", c.output, raw.source)
			}
		}
	}
	dialect := ""
	langfuseExclusive := false
	if !c.any {
		if lf, exclusive, ok := n.langfuseUsage(); ok {
			c, dialect, langfuseExclusive = lf, "langfuse", exclusive
			if exclusive {
				ex.step("usage read from langfuse.observation.usage_details: Langfuse's usage types are disjoint (input is the uncached part)")
			} else {
				ex.step("usage read from langfuse.observation.usage_details: the provider's own usage object (OpenAI: prompt_tokens includes cached tokens)")
			}
		}
	}
	switch {
	case dialect != "":
	case inputField == fLLMPromptTok:
		dialect = "openinference"
	case inputField == fAIInputTok || inputField == fAINoCache || inputField == fAIPromptTok:
		dialect = "vercel-ai"
	case n.has(fLiteLLMUsage) || n.has(fCostTotal):
		dialect = "litellm"
	}

	hasUsage := c.any
	if hasUsage {
		a := n.reading(spanIdentity{scope: out.ScopeName, version: out.ScopeVersion,
			provider: out.Provider, name: out.Name, model: out.Model, dialect: dialect})
		if dialect == "langfuse" {
			a.exclusive, a.why = langfuseExclusive, "langfuse usage_details"
		}
		n.note(AttrUsageReading, a.name)
		if ex != nil {
			ex.Reading = a.name
			for _, r := range n.table {
				if r.Name == a.name {
					ex.Instrumentation, ex.Source = r.Instrumentation, r.Source
				}
			}
			ex.step("reading %s (scope %q %s, provider %q): %s", a.name, out.ScopeName, out.ScopeVersion, out.Provider, a.why)
		}
		reportedInput := c.input
		if a.cacheReadTwice && c.hasInput && c.cacheRead > 0 {
			if ex != nil {
				ex.step("input %d counts cache reads twice: − %d = %d", c.input, c.cacheRead, c.input-min(c.input, c.cacheRead))
			}
			c.input -= min(c.input, c.cacheRead)
			n.corrected = a.name
		}
		reportedOutput := c.output
		a.outputExclReasoning = a.outputExclReasoning || outputWithoutReasoning
		if !a.outputExclReasoning && c.reasoning > 0 && len(totals) > 0 && dialect != "langfuse" {
			// A reported total says whether the output counts reasoning
			// (Google's thoughts are apart from candidates, and providers
			// that pass them through report them apart from output).
			var buf [6]uint64
			inputs := totalInputs(buf[:], reportedInput, c)
			v, why := reasoningFromTotals(c, inputs, totals, ex != nil)
			if v == totalReasoningOut {
				a.outputExclReasoning = true
			}
			if ex != nil && why != "" {
				ex.step("output: %s", why)
			}
		}
		if a.outputExclReasoning {
			c.output += c.reasoning
		}
		r := reconcile(c, a.exclusive, ex != nil)
		if ex != nil {
			ex.step("input: %s", r.why)
		}
		out.InputTokens = r.input
		out.OutputTokens = c.output
		out.CacheReadTokens = c.cacheRead
		out.CacheWriteTokens = c.cacheWrite
		out.ReasoningTokens = c.reasoning
		out.UsageMode = r.mode
		if ex != nil {
			if a.outputExclReasoning && c.reasoning > 0 {
				ex.step("output: %d reported without reasoning, + reasoning %d = %d", reportedOutput, c.reasoning, out.OutputTokens)
			} else {
				ex.step("output: %d (reasoning %d is part of it)", c.output, c.reasoning)
			}
		}
		if out.SpanType != schema.TypeInference || n.span.aggregated {
			out.UsageMode = schema.UsageAggregated
			if ex != nil {
				ex.step("this %s span's usage repeats its children's and counts only in a run whose inference spans carry none", out.SpanType)
			}
		}
		if r.unreconciled {
			out.UsageUnreconciled = 1
		}
		if out.InputTokens == 0 && out.OutputTokens == 0 && out.CacheReadTokens == 0 && out.CacheWriteTokens == 0 &&
			out.SpanType == schema.TypeInference {
			out.UsageUnreconciled = 1
			n.note(AttrUsageProblem, "every usage bucket is 0 (a streamed call that did not report usage?)")
			ex.step("every usage bucket is 0: the span is marked unreconciled and left unpriced rather than priced at $0")
		}
	}
	n.cost(out, hasUsage, ex)
	out.UsageRecord = n.usageRecord(out, ex)
	n.rate(out, ex)
}

// totalInputs are the input counts a reported total may have been summed
// from, appended to buf[:0]: the input as the span reported it first (the
// one reasoningFromTotals trusts before the others), then the input after
// the reading's corrections, the uncached input, and the input with and
// without the cache. The order of the rest does not matter: a total
// decides only when one reading of the input explains it.
func totalInputs(buf []uint64, reported uint64, c tokenCounts) []uint64 {
	xs := append(buf[:0], reported)
	add := func(x uint64, ok bool) {
		if ok && !slices.Contains(xs, x) {
			xs = append(xs, x)
		}
	}
	add(c.input, true)
	cache, carry := bits.Add64(c.cacheRead, c.cacheWrite, 0)
	if carry != 0 {
		return xs
	}
	add(c.input-min(c.input, cache), true)
	withCache, carry := bits.Add64(c.input, cache, 0)
	add(withCache, carry == 0)
	if c.hasNoCache {
		add(c.noCache, true)
		s, carry := bits.Add64(c.noCache, cache, 0)
		add(s, carry == 0)
	}
	return xs
}

// cost applies a client-sent cost, else the pricer, else marks the span
// unpriced. A client cost of exactly 0 on a span with usage means the
// client had no price for the model (OpenLIT sends that): the catalog
// prices it and AttrCostNote records it. On an inference span without
// usage it means nothing was measured (pydantic-ai prices a usage it failed
// to extract at $0): the span is unreconciled and unpriced, never $0.
func (n *normalizer) cost(out *schema.Span, hasUsage bool, ex *Explanation) {
	cc := costChain()
	client, key, ok := 0.0, "", false
	if fd, found := n.firstNumber(cc[:]...); found {
		if f, valid := numberValue(fd.h.v); valid && f >= 0 {
			client, key, ok = f, fd.h.key, true
		}
	}
	if !ok {
		if f, found := n.langfuseCost(); found {
			client, key, ok = f, "langfuse.observation.cost_details", true
		}
	}
	usageNonZero := out.InputTokens+out.OutputTokens+out.CacheReadTokens+out.CacheWriteTokens > 0
	if ok && client == 0 && !usageNonZero && out.SpanType == schema.TypeInference {
		out.UsageUnreconciled = 1
		out.CostSource = schema.CostUnpriced
		n.note(AttrUsageProblem, key+" was 0 on a call that reports no usage: the call is unpriced, not free")
		if ex != nil {
			ex.step("cost: the client sent %s = 0 with no usage on an inference span: nothing was measured, so the span is unreconciled and unpriced rather than $0", key)
		}
		return
	}
	if ok && (client != 0 || !usageNonZero) {
		out.CostTotal = client
		out.CostSource = schema.CostClient
		if ex != nil {
			ex.step("cost: the client sent %s = %s USD; a client cost always wins", key, strconv.FormatFloat(client, 'f', -1, 64))
		}
		return
	}
	if ok {
		n.note(AttrCostNote, key+" was 0 on a span with usage: priced from the catalog")
		if ex != nil {
			ex.step("cost: the client sent %s = 0 with non-zero usage, which means it had no price: priced from the catalog", key)
		}
	}
	if !hasUsage {
		return
	}
	if out.UsageUnreconciled == 1 && !usageNonZero {
		out.CostSource = schema.CostUnpriced
		return
	}
	if n.opts.Pricer != nil {
		n.opts.Pricer.Apply(out)
		if pn, ok := n.opts.Pricer.(PriceNoter); ok {
			if note := pn.PriceNote(out); note != "" {
				n.note(AttrCostNote, note)
			}
		}
	}
	if out.CostSource == schema.CostNone {
		out.CostSource = schema.CostUnpriced
	}
	if ex != nil {
		if pe, ok := n.opts.Pricer.(PriceExplainer); ok {
			ex.CostLines = pe.ExplainPrice(out)
		}
		if out.CostSource == schema.CostUnpriced {
			ex.step("cost: no catalog entry matches provider %q model %q: unpriced", out.Provider, out.Model)
		}
	}
}

// langfuseUsage reads the Langfuse SDK's langfuse.observation.usage_details
// JSON object. Langfuse's own usage types are disjoint, each priced on its
// own (input is the uncached input): exclusive is true. Langfuse's OpenAI
// integration puts OpenAI's raw usage object there instead (prompt_tokens
// with cached tokens inside): exclusive is false.
func (n *normalizer) langfuseUsage() (c tokenCounts, exclusive, ok bool) {
	fd, found := n.first(fLFUsage)
	if !found || fd.h.act != "" || fd.h.v.Type() != wire.ValueStr {
		return c, false, false
	}
	var obj map[string]any
	if json.Unmarshal([]byte(fd.h.v.Str()), &obj) != nil {
		return c, false, false
	}
	num := func(keys ...string) (uint64, bool) {
		for _, k := range keys {
			if f, ok := obj[k].(float64); ok {
				v, valid := floatCount(f)
				if !valid {
					c.malformed = true
				}
				return v, true
			}
		}
		return 0, false
	}
	if _, raw := obj["prompt_tokens"]; raw {
		c.input, c.hasInput = num("prompt_tokens")
		c.output, _ = num("completion_tokens")
		b, _ := usageObjectBuckets(obj)
		c.cacheRead, c.cacheWrite, c.reasoning = b.cacheRead, b.cacheWrite, b.reasoning
		c.any = true
		return c, false, true
	}
	var any bool
	if v, ok := num("input", "input_tokens"); ok {
		c.input, c.hasInput, any = v, true, true
	}
	if v, ok := num("output", "output_tokens"); ok {
		c.output, any = v, true
	}
	if v, ok := num("cache_read_input_tokens", "input_cached_tokens", "input_cache_read", "cache_read"); ok {
		c.cacheRead, any = v, true
	}
	if v, ok := num("cache_creation_input_tokens", "input_cache_creation", "input_cache_write", "cache_write"); ok {
		c.cacheWrite, any = v, true
	}
	if v, ok := num("output_reasoning_tokens", "output_reasoning", "reasoning_tokens"); ok {
		c.reasoning = v
	}
	// Langfuse lists reasoning apart from output: its types are disjoint.
	c.output += c.reasoning
	c.any = any
	return c, true, any
}

// langfuseCost reads langfuse.observation.cost_details: its "total", else
// the sum of its parts.
func (n *normalizer) langfuseCost() (float64, bool) {
	m, ok := n.jsonNumbers(fLFCost)
	if !ok || len(m) == 0 {
		return 0, false
	}
	if t, ok := m["total"]; ok {
		return t, t >= 0
	}
	// Summed in key order: floating-point addition is not associative,
	// and a map's order changes from call to call, so the same span would
	// otherwise cost 0.02082 once and 0.020819999999999998 the next time.
	var sum float64
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if m[k] < 0 {
			return 0, false
		}
		sum += m[k]
	}
	return sum, true
}

// reading resolves a span's reading once per distinct identity in a
// request: the spans of one instrumentation share it.
func (n *normalizer) reading(id spanIdentity) appliedReading {
	if a, ok := n.readings[id]; ok {
		return a
	}
	if n.readings == nil {
		n.readings = make(map[spanIdentity]appliedReading, 4)
	}
	a := n.opts.Usage.resolve(n.table, id)
	n.readings[id] = a
	return a
}

// has reports whether the span (or its resource) carries f.
func (n *normalizer) has(f field) bool {
	_, ok := n.first(f)
	return ok
}

// jsonNumbers parses a string attribute holding a flat JSON object of
// numbers; non-numeric members are skipped.
func (n *normalizer) jsonNumbers(f field) (map[string]float64, bool) {
	fd, ok := n.first(f)
	if !ok || fd.h.act != "" || fd.h.v.Type() != wire.ValueStr {
		return nil, false
	}
	var raw map[string]any
	if json.Unmarshal([]byte(fd.h.v.Str()), &raw) != nil {
		return nil, false
	}
	out := make(map[string]float64, len(raw))
	for k, v := range raw {
		switch x := v.(type) {
		case float64:
			if !math.IsNaN(x) && !math.IsInf(x, 0) {
				out[k] = x
			}
		case string:
			if f, err := strconv.ParseFloat(x, 64); err == nil {
				out[k] = f
			}
		}
	}
	return out, true
}

// usageFields are every field derive reads, for Explanation.Reported.
func usageFields() []field {
	in, outc, cr, cw, rs, cc := inputChain(), outputChain(), cacheReadChain(), cacheWriteChain(), reasoningChain(), costChain()
	tc := totalChain()
	fs := slices.Concat(in[:], outc[:], cr[:], cw[:], rs[:], tc[:], cc[:])
	return append(fs, fAINoCache, fAIProviderMeta, fUsageRaw, fLiteLLMUsage, fLogfireResp, fLFUsage, fLFCost)
}

// storedNormalizer prepares a normalizer over a stored span's attributes,
// for re-deriving and explaining it. Privacy rules were applied when the
// span was stored, so none apply here.
func storedNormalizer(s *schema.Span, opts *Options) (*normalizer, bool) {
	n := &normalizer{opts: opts, lim: opts.Limits, table: opts.Usage.table(), confidence: ConfidenceRules(), now: time.Now().UTC()}
	attrs := make([]wire.KeyValue, 0, len(s.AttrKeys)+6)
	put := func(k string, v wire.Value) { attrs = append(attrs, wire.KeyValue{Key: k, Value: v}) }
	reported := false
	usage := usageFields()
	for i, k := range s.AttrKeys {
		if i < len(s.AttrValues) {
			put(k, wire.StrValue(s.AttrValues[i]))
			if f := fieldOf(k); f != fNone && slices.Contains(usage, f) {
				reported = true
			}
		}
	}
	reconstructed := false
	if !reported && (s.UsageMode != schema.UsageNone || s.CostSource == schema.CostClient) {
		// Stored before tally kept the reported values: rebuild them from
		// the buckets and the reading recorded then.
		reconstructed = true
		in := s.InputTokens
		if s.UsageMode == schema.UsageAdditive {
			in -= min(in, s.CacheReadTokens+s.CacheWriteTokens)
		}
		if s.UsageMode != schema.UsageNone {
			put("gen_ai.usage.input_tokens", wire.IntValue(int64(in)))
			put("gen_ai.usage.output_tokens", wire.IntValue(int64(s.OutputTokens)))
			put("gen_ai.usage.cache_read.input_tokens", wire.IntValue(int64(s.CacheReadTokens)))
			put("gen_ai.usage.cache_write.input_tokens", wire.IntValue(int64(s.CacheWriteTokens)))
			put("gen_ai.usage.reasoning.output_tokens", wire.IntValue(int64(s.ReasoningTokens)))
		}
		if s.CostSource == schema.CostClient {
			put("gen_ai.usage.cost", wire.DoubleValue(s.CostTotal))
		}
	}
	n.span.load(attrs, &Privacy{}, nil)
	res := make([]wire.KeyValue, 0, len(s.ResourceKeys))
	for i, k := range s.ResourceKeys {
		if i < len(s.ResourceValues) {
			res = append(res, wire.KeyValue{Key: k, Value: wire.StrValue(s.ResourceValues[i])})
		}
	}
	n.res = &resourceCtx{}
	n.res.view.load(res, &Privacy{}, nil)
	return n, reconstructed
}

// retype applies the current operation mapping to a stored span, so a span
// stored as "other" under an operation name tally now knows (LiteLLM's
// acompletion) becomes the inference span it is.
func retype(s *schema.Span) {
	if s.Operation == "" {
		return
	}
	op := canonicalOperation(s.Operation)
	if t := spanTypeFromOperation(op); t != schema.TypeOther || s.SpanType == schema.TypeOther {
		s.Operation, s.SpanType = op, t
	}
}

// Rederive derives a stored span's usage and cost again from what it
// reported, with the current readings (opts.Usage) and prices
// (opts.Pricer), and returns the re-derived copy and whether anything
// changed. It is a pure function of the stored span and the rules, so
// re-deriving a re-derived span changes nothing. Spans stored before tally
// kept the reported values are re-read from their buckets and the reading
// recorded then. The returned span keeps the input's Version.
func Rederive(s schema.Span, opts Options) (schema.Span, bool) {
	before := s
	retype(&s)
	n, _ := storedNormalizer(&s, &opts)
	n.derive(&s, nil)
	s.AttrKeys, s.AttrValues = replaceNotes(s.AttrKeys, s.AttrValues, n.notes)
	changed := bucketsOf(&s) != bucketsOf(&before) || s.UsageMode != before.UsageMode ||
		s.UsageUnreconciled != before.UsageUnreconciled || s.SpanType != before.SpanType ||
		s.Operation != before.Operation ||
		s.CostInput != before.CostInput || s.CostCacheRead != before.CostCacheRead ||
		s.CostCacheWrite != before.CostCacheWrite || s.CostOutput != before.CostOutput ||
		s.CostTotal != before.CostTotal || s.CostSource != before.CostSource ||
		s.UsageRecord != before.UsageRecord || s.CostConfidence != before.CostConfidence ||
		s.PriceEntry != before.PriceEntry || s.PriceVersion != before.PriceVersion ||
		!slices.Equal(s.AttrKeys, before.AttrKeys) || !slices.Equal(s.AttrValues, before.AttrValues)
	return s, changed
}

// Explain says how the current rules derive a stored span's usage and
// cost, and where that differs from what is stored.
func Explain(s schema.Span, opts Options) Explanation {
	stored := s
	retype(&s)
	n, reconstructed := storedNormalizer(&s, &opts)
	ex := Explanation{Reading: "", Scope: s.ScopeName, ScopeVersion: s.ScopeVersion, Provider: s.Provider,
		Model: s.Model, SpanType: s.SpanType, Reconstructed: reconstructed, Steps: []string{}}
	for _, f := range usageFields() {
		if h := n.span.get(f); h != nil && h.present() {
			ex.Reported = append(ex.Reported, Reported{Key: h.key, Value: valueText(h.v, &n.scratch)})
		} else if h := n.res.view.get(f); h != nil && h.present() {
			ex.Reported = append(ex.Reported, Reported{Key: h.key, Value: valueText(h.v, &n.scratch), OnResource: true})
		}
	}
	if reconstructed {
		ex.step("reported values rebuilt from the stored buckets: the span was stored before tally kept them")
	}
	n.derive(&s, &ex)
	if ex.Reading == "" && s.UsageMode == schema.UsageNone {
		ex.Reading = "none"
		ex.step("the span reports no usage")
	}
	ex.Usage, ex.UsageMode, ex.Unreconciled = bucketsOf(&s), s.UsageMode, s.UsageUnreconciled == 1
	ex.CostSource, ex.PriceEntry, ex.PriceVersion, ex.CostUSD = s.CostSource, s.PriceEntry, s.PriceVersion, s.CostTotal
	ex.UsageRecord = s.UsageRecord == 1
	if b := bucketsOf(&stored); b != ex.Usage {
		ex.Stored = &b
	}
	if stored.CostTotal != s.CostTotal {
		c := stored.CostTotal
		ex.StoredCostUSD = &c
	}
	return ex
}

// note adds a tally.* attribute derive writes on the span; a second note
// under the same key joins the first ("; "), so a span never carries one
// key twice.
func (n *normalizer) note(k, v string) {
	for i := range n.notes {
		if n.notes[i].k == k {
			n.notes[i].v += "; " + v
			return
		}
	}
	n.notes = append(n.notes, kv{k: k, v: v})
}

// replaceNotes returns keys/values without the derived attributes and with
// notes added, sorted by key as AttrKeys are.
func replaceNotes(keys, values []string, notes []kv) ([]string, []string) {
	pairs := make([]kv, 0, len(keys)+len(notes))
	for i, k := range keys {
		if i < len(values) && !slices.Contains(derivedKeys[:], k) {
			pairs = append(pairs, kv{k: k, v: values[i]})
		}
	}
	pairs = append(pairs, notes...)
	k, v := splitSorted(pairs)
	return k, v
}
