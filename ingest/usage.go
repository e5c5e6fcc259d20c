package ingest

import (
	"math"
	"math/bits"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/tallyhq/tally/schema"
)

// UsagePolicy says, for spans whose numbers alone do not decide it, whether
// the reported input token count excludes cache tokens ("additive": tally adds
// cache read and write to it) or already includes them ("inclusive", what the
// conventions ask for). See SEMCONV.md, "Usage: the traps", trap 1.
//
// Lookup order: Scopes by exact instrumentation scope name, then Providers by
// exact provider name, then Providers by a wildcard "prefix.*" for each dotted
// prefix of the provider ("gcp.*" matches gcp.gemini), then the built-in
// default: anthropic and aws.bedrock additive, every other provider
// (openai, gcp.*, azure.*, …) inclusive. The zero UsagePolicy is the
// built-in default.
type UsagePolicy struct {
	// Providers maps a canonical provider name (gen_ai.provider.name spelling)
	// or a "prefix.*" pattern to true when that provider's input excludes cache.
	Providers map[string]bool
	// Scopes maps an instrumentation scope name to true when that
	// instrumentation reports input without cache; it overrides Providers.
	Scopes map[string]bool
}

// DefaultUsagePolicy returns the built-in defaults spelled out, as a starting
// point for configuration.
func DefaultUsagePolicy() UsagePolicy {
	return UsagePolicy{Providers: map[string]bool{
		"anthropic":   true,
		"aws.bedrock": true,
		"openai":      false,
		"gcp.*":       false,
		"azure.*":     false,
	}}
}

// Additive reports whether input tokens from this instrumentation scope and
// provider are taken to exclude cache tokens.
func (p UsagePolicy) Additive(scope, provider string) bool {
	if v, ok := p.Scopes[scope]; ok && scope != "" {
		return v
	}
	if v, ok := p.Providers[provider]; ok {
		return v
	}
	if len(p.Providers) > 0 {
		for i := len(provider) - 1; i > 0; i-- {
			if provider[i] != '.' {
				continue
			}
			if v, ok := p.Providers[provider[:i]+".*"]; ok {
				return v
			}
		}
	}
	switch provider {
	case "anthropic", "aws.bedrock":
		return true
	}
	return false
}

// tokenCounts are the usage buckets as reported, before reconciliation.
type tokenCounts struct {
	input, output, cacheRead, cacheWrite, reasoning uint64
	hasInput                                        bool
	any                                             bool // any usage bucket was reported
	malformed                                       bool // a bucket was negative, fractional or not a number
}

// reconciled is the stored form of a span's usage.
type reconciled struct {
	input        uint64
	mode         string
	unreconciled bool
}

// reconcile turns reported counts into the stored, inclusive form
// (input includes cache read and write; output includes reasoning).
//
//   - cacheRead+cacheWrite > input: input cannot have included the cache, so
//     it was reported without it: input += cache, mode additive.
//   - else, when there are cache tokens and the policy says additive:
//     input += cache, mode additive.
//   - else mode inclusive: input stands (with no cache tokens both readings
//     agree, and nothing was added).
//
// The numbers are marked unreconciled (never clamped) when no reading makes
// them consistent or they could not be read:
//   - reasoning > output (reasoning is part of output);
//   - cache tokens reported without any input count, so the uncached input is
//     unknown (input is stored as the cache tokens alone);
//   - a bucket was negative, fractional or not a number (it counts as 0);
//   - the sum overflows (input keeps its reported value).
//
// Under the inclusive reading cache > input cannot occur: that case is
// always read as additive above.
func reconcile(c tokenCounts, additive bool) reconciled {
	r := reconciled{input: c.input, mode: schema.UsageInclusive, unreconciled: c.malformed}
	cache, carry := bits.Add64(c.cacheRead, c.cacheWrite, 0)
	if carry != 0 {
		r.unreconciled = true
		return r
	}
	if cache > c.input || (cache > 0 && additive) {
		sum, carry := bits.Add64(c.input, cache, 0)
		if carry != 0 {
			r.unreconciled = true
			return r
		}
		r.input, r.mode = sum, schema.UsageAdditive
	}
	if cache > 0 && !c.hasInput {
		r.unreconciled = true
	}
	if c.reasoning > c.output {
		r.unreconciled = true
	}
	return r
}

// tokenValue reads a token count sent as an int, a double or a string.
// ok is false when v holds no usable count: negative, fractional, NaN,
// out of range or not a number.
func tokenValue(v pcommon.Value) (n uint64, ok bool) {
	switch v.Type() {
	case pcommon.ValueTypeInt:
		i := v.Int()
		if i < 0 {
			return 0, false
		}
		return uint64(i), true
	case pcommon.ValueTypeDouble:
		return floatCount(v.Double())
	case pcommon.ValueTypeStr:
		s := strings.TrimSpace(v.Str())
		if u, err := strconv.ParseUint(s, 10, 64); err == nil {
			return u, true
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, false
		}
		return floatCount(f)
	}
	return 0, false
}

func floatCount(f float64) (uint64, bool) {
	if f < 0 || f != math.Trunc(f) || f >= 1<<64 || math.IsNaN(f) {
		return 0, false
	}
	return uint64(f), true
}

// numberValue reads a float sent as a double, an int or a string; ok is false
// for NaN, infinities and non-numbers.
func numberValue(v pcommon.Value) (float64, bool) {
	var f float64
	switch v.Type() {
	case pcommon.ValueTypeDouble:
		f = v.Double()
	case pcommon.ValueTypeInt:
		f = float64(v.Int())
	case pcommon.ValueTypeStr:
		var err error
		f, err = strconv.ParseFloat(strings.TrimSpace(v.Str()), 64)
		if err != nil {
			return 0, false
		}
	default:
		return 0, false
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}
