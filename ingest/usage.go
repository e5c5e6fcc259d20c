package ingest

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"

	"github.com/tallyhq/tally/ingest/wire"

	"github.com/tallyhq/tally/schema"
)

// UsagePolicy configures how reported usage is read. The built-in table of
// instrumentations (Readings) decides for every span it recognizes; the
// policy's Readings override that table by reading name or scope name, and
// its Providers decide for spans of instrumentations the table does not
// know (or whose reading defers to the provider, as the Vercel AI SDK 5
// does). See docs/instrumentations.md, "Why per instrumentation", trap 1.
//
// Lookup order for whether input excludes cache:
//  1. Readings[scope name], then Readings[name of the matched reading];
//  2. the matched reading's Input rule, unless it is InputByProvider;
//  3. Providers by exact provider name, then by "prefix.*" for each dotted
//     prefix ("gcp.*" matches gcp.gemini);
//  4. the built-in provider default: anthropic and aws.bedrock exclude
//     cache (their APIs' convention), every other provider includes it.
//
// The zero UsagePolicy is the built-in behaviour.
type UsagePolicy struct {
	// Providers maps a canonical provider name or a "prefix.*" pattern to
	// true when that provider's input excludes cache, for instrumentations
	// without a rule of their own.
	Providers map[string]bool
	// Readings maps a reading name (Reading.Name) or an instrumentation
	// scope name to true when that instrumentation's input excludes cache;
	// it overrides the built-in table.
	Readings map[string]bool
	// Table replaces the built-in table of instrumentations (Readings());
	// nil means the built-in one.
	Table []Reading
}

// DefaultUsagePolicy returns the built-in behaviour, with the provider
// defaults spelled out, as a starting point for configuration.
func DefaultUsagePolicy() UsagePolicy {
	return UsagePolicy{Providers: map[string]bool{
		"anthropic":   true,
		"aws.bedrock": true,
		"openai":      false,
		"gcp.*":       false,
		"azure.*":     false,
	}}
}

// ParseUsageSetting reads a configuration value "inclusive" or "exclusive"
// (how an instrumentation or provider reports input relative to cache) as
// the Providers/Readings map value: true for exclusive.
func ParseUsageSetting(v string) (exclusive bool, err error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "inclusive":
		return false, nil
	case "exclusive":
		return true, nil
	}
	return false, fmt.Errorf("usage reading %q: want inclusive (input includes cache) or exclusive (input excludes cache)", v)
}

// ParseUsagePolicy builds a UsagePolicy from configuration: readings and
// providers are "KEY=inclusive" or "KEY=exclusive" settings, where a
// reading KEY is a reading name (see Readings) or an instrumentation scope
// name, and a provider KEY a gen_ai.provider.name value or "prefix.*". It
// starts from DefaultUsagePolicy.
func ParseUsagePolicy(readings, providers []string) (UsagePolicy, error) {
	p := DefaultUsagePolicy()
	p.Readings = map[string]bool{}
	for _, set := range []struct {
		flag string
		list []string
		dst  map[string]bool
	}{{"usage-reading", readings, p.Readings}, {"usage-provider", providers, p.Providers}} {
		for _, kv := range set.list {
			k, v, ok := strings.Cut(kv, "=")
			k = strings.TrimSpace(k)
			if !ok || k == "" {
				return UsagePolicy{}, fmt.Errorf("--%s %q: want KEY=inclusive|exclusive", set.flag, kv)
			}
			exclusive, err := ParseUsageSetting(v)
			if err != nil {
				return UsagePolicy{}, fmt.Errorf("--%s %q: %w", set.flag, kv, err)
			}
			set.dst[k] = exclusive
		}
	}
	return p, nil
}

// appliedReading is what Normalize decided for one span.
type appliedReading struct {
	name                string // Reading.Name, or ProviderDefault
	exclusive           bool   // input excludes cache tokens
	why                 string // how exclusive was decided, for explanations
	outputExclReasoning bool   // output leaves reasoning out (tally adds it)
	cacheReadTwice      bool   // the reported input counts cache reads twice
}

// table is the reading table in force.
func (p *UsagePolicy) table() []Reading {
	if p.Table != nil {
		return p.Table
	}
	return Readings()
}

// spanIdentity is what identifies a span's instrumentation and reading.
type spanIdentity struct {
	scope, version string
	provider       string
	name, model    string
	// dialect names a reading to assume when the scope is not in the table
	// (the attribute dialect of the winning input key), "" for none.
	dialect string
}

// resolve decides the reading for a span.
func (p *UsagePolicy) resolve(table []Reading, id spanIdentity) appliedReading {
	var r *Reading
	for i := range table {
		if table[i].matches(id) {
			r = &table[i]
			break
		}
	}
	if r == nil && id.dialect != "" {
		for i := range table {
			if table[i].Name == id.dialect {
				r = &table[i]
				break
			}
		}
	}
	a := appliedReading{name: ProviderDefault}
	if r != nil {
		a.name, a.outputExclReasoning, a.cacheReadTwice = r.Name, r.OutputExcludesReasoning, r.Input == InputCountsCacheReadTwice
	}
	if v, ok := p.Readings[id.scope]; ok && id.scope != "" {
		a.exclusive, a.why, a.cacheReadTwice = v, "configured for scope "+strconv.Quote(id.scope), false
		return a
	}
	if r != nil {
		if v, ok := p.Readings[r.Name]; ok {
			a.exclusive, a.why, a.cacheReadTwice = v, "configured for reading "+strconv.Quote(r.Name), false
			return a
		}
		switch r.Input {
		case InputIncludesCache, InputCountsCacheReadTwice:
			a.why = "reading " + r.Name + ": " + r.Input.String()
			return a
		case InputExcludesCache:
			a.exclusive, a.why = true, "reading "+r.Name+": "+r.Input.String()
			return a
		}
	}
	a.exclusive, a.why = p.providerExclusive(id.provider)
	return a
}

// providerExclusive is the provider default (steps 3 and 4 of UsagePolicy).
func (p *UsagePolicy) providerExclusive(provider string) (bool, string) {
	if v, ok := p.Providers[provider]; ok {
		return v, "configured for provider " + strconv.Quote(provider)
	}
	for i := len(provider) - 1; i > 0; i-- {
		if provider[i] != '.' {
			continue
		}
		if v, ok := p.Providers[provider[:i]+".*"]; ok {
			return v, "configured for providers " + strconv.Quote(provider[:i]+".*")
		}
	}
	switch provider {
	case "anthropic", "aws.bedrock":
		return true, "provider " + provider + " default: its API reports input without cache"
	}
	if provider == "" {
		return false, "no provider: input taken to include cache, as the conventions ask"
	}
	return false, "provider " + provider + " default: its API counts cache inside input"
}

// tokenCounts are the usage buckets as reported, before reconciliation.
type tokenCounts struct {
	input, output, cacheRead, cacheWrite, reasoning uint64
	// noCache is the uncached input when the instrumentation says it
	// outright (the Vercel AI SDK 6+ ai.usage.inputTokenDetails.noCacheTokens).
	noCache    uint64
	hasInput   bool
	hasNoCache bool
	any        bool // any usage bucket was reported
	malformed  bool // a bucket was negative, fractional or not a number
}

// reconciled is the stored form of a span's usage.
type reconciled struct {
	input        uint64
	mode         string
	unreconciled bool
	why          string // how input was derived, when explaining
}

// reconcile turns reported counts into the stored, inclusive form (why is
// written only when explain is set: ingest does not pay for the words)
// (input includes cache read and write; output includes reasoning).
//
//   - the uncached input was reported outright: input = it + cache read +
//     cache write, whatever the reported total says (mode additive when the
//     reported input equals the uncached part, inclusive otherwise);
//   - cacheRead+cacheWrite > input: input cannot have included the cache, so
//     it was reported without it: input += cache, mode additive;
//   - else, when there are cache tokens and the reading says input excludes
//     cache: input += cache, mode additive;
//   - else mode inclusive: input stands (with no cache tokens both readings
//     agree, and nothing was added).
//
// The numbers are marked unreconciled (never clamped) when no reading makes
// them consistent or they could not be read:
//   - reasoning > output (reasoning is part of output; derive has already
//     added it to output when the reading or a reported total says the
//     output left it out, see reasoningFromTotals);
//   - cache tokens reported without any input count, so the uncached input is
//     unknown (input is stored as the cache tokens alone);
//   - a reported total that is neither the uncached part nor the sum;
//   - a bucket was negative, fractional or not a number (it counts as 0);
//   - the sum overflows (input keeps its reported value).
func reconcile(c tokenCounts, exclusive, explain bool) reconciled {
	r := reconciled{input: c.input, mode: schema.UsageInclusive, unreconciled: c.malformed}
	cache, carry := bits.Add64(c.cacheRead, c.cacheWrite, 0)
	if carry != 0 {
		r.unreconciled = true
		r.why = "cache read + cache write overflows"
		return r
	}
	if c.hasNoCache {
		sum, carry := bits.Add64(c.noCache, cache, 0)
		if carry != 0 {
			r.unreconciled = true
			r.why = "uncached + cache overflows"
			return r
		}
		r.input = sum
		if explain {
			r.why = fmt.Sprintf("uncached input reported outright: %d + cache read %d + cache write %d = %d", c.noCache, c.cacheRead, c.cacheWrite, sum)
		}
		switch {
		case c.hasInput && c.input == sum:
		case c.hasInput && c.input == c.noCache && cache > 0:
			r.mode = schema.UsageAdditive
		case c.hasInput:
			r.unreconciled = true
			if explain {
				r.why += fmt.Sprintf("; the reported input %d is neither", c.input)
			}
		}
	} else if cache > c.input || (cache > 0 && exclusive) {
		sum, carry := bits.Add64(c.input, cache, 0)
		if carry != 0 {
			r.unreconciled = true
			r.why = "input + cache overflows"
			return r
		}
		switch {
		case !explain:
		case cache > c.input:
			r.why = fmt.Sprintf("cache %d > reported input %d, so input cannot include it: %d + %d = %d", cache, c.input, c.input, cache, sum)
		default:
			r.why = fmt.Sprintf("input excludes cache: %d + cache read %d + cache write %d = %d", c.input, c.cacheRead, c.cacheWrite, sum)
		}
		r.input, r.mode = sum, schema.UsageAdditive
	} else if explain && cache > 0 {
		r.why = fmt.Sprintf("input includes cache: %d stands (cache read %d and write %d are part of it)", c.input, c.cacheRead, c.cacheWrite)
	} else if explain {
		r.why = fmt.Sprintf("no cache tokens: input %d stands", c.input)
	}
	if cache > 0 && !c.hasInput && !c.hasNoCache {
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
func tokenValue(v wire.Value) (n uint64, ok bool) {
	switch v.Type() {
	case wire.ValueInt:
		i := v.Int()
		if i < 0 {
			return 0, false
		}
		return uint64(i), true
	case wire.ValueDouble:
		return floatCount(v.Double())
	case wire.ValueStr:
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
func numberValue(v wire.Value) (float64, bool) {
	var f float64
	switch v.Type() {
	case wire.ValueDouble:
		f = v.Double()
	case wire.ValueInt:
		f = float64(v.Int())
	case wire.ValueStr:
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

// reportedTotal is one total a span reports: input + output as the
// instrumentation (or the provider's usage object) counts them.
type reportedTotal struct {
	n   uint64
	key string // the attribute key, or the usage object's member
	in  string // the attribute holding the usage object, "" for a key of its own
}

func (t reportedTotal) String() string {
	if t.in == "" {
		return t.key
	}
	return t.key + " in " + t.in
}

// totalVerdict is what the reported totals say about reasoning.
type totalVerdict uint8

const (
	totalSilent       totalVerdict = iota // no total decides
	totalReasoningOut                     // total = input + output + reasoning: output leaves reasoning out
	totalReasoningIn                      // total = input + output: reasoning is part of output
)

// add3 sums token counts; ok is false on overflow.
func add3(a, b, c uint64) (uint64, bool) {
	s, c1 := bits.Add64(a, b, 0)
	s, c2 := bits.Add64(s, c, 0)
	return s, c1 == 0 && c2 == 0
}

// reasoningFromTotals reads the reported totals as evidence for whether
// the reported output includes the reasoning tokens (c.reasoning > 0).
// inputs are the input counts a total may have been summed from, the
// instrumentation's own reported input first (the one its total is
// normally the sum of), then the other readings of it (with and without
// cache). For each total, in order:
//   - with the reported input: total = input + output + reasoning says
//     output leaves reasoning out; total = input + output says it is part
//     of output;
//   - else with the other inputs: the relation that holds for some of them,
//     when only one does (both holding, for different inputs, is ambiguous);
//   - else the total matches neither and the next one is tried.
//
// The first total that decides wins; why says which (when explain is set).
func reasoningFromTotals(c tokenCounts, inputs []uint64, totals []reportedTotal, explain bool) (v totalVerdict, why string) {
	var skipped []string
	for _, t := range totals {
		out, in := false, false
		var at uint64
		for i, x := range inputs {
			if s, ok := add3(x, c.output, c.reasoning); ok && s == t.n && !out {
				out, at = true, x
			}
			if s, ok := add3(x, c.output, 0); ok && s == t.n && !in {
				in, at = true, x
			}
			if i == 0 && out != in {
				break
			}
		}
		switch {
		case out && !in:
			if explain {
				why = fmt.Sprintf("%s %d = input %d + output %d + reasoning %d: the output was reported without reasoning", t, t.n, at, c.output, c.reasoning)
				why = strings.Join(append(skipped, why), "; ")
			}
			return totalReasoningOut, why
		case in && !out:
			if explain {
				why = fmt.Sprintf("%s %d = input %d + output %d: reasoning %d is part of the output", t, t.n, at, c.output, c.reasoning)
				why = strings.Join(append(skipped, why), "; ")
			}
			return totalReasoningIn, why
		case !explain:
		case in && out:
			skipped = append(skipped, fmt.Sprintf("%s %d is input + output for one reading of input and input + output + reasoning for another", t, t.n))
		default:
			skipped = append(skipped, fmt.Sprintf("%s %d is neither input + output nor input + output + reasoning (output %d, reasoning %d) for any reading of the input", t, t.n, c.output, c.reasoning))
		}
	}
	if explain && len(skipped) > 0 {
		why = strings.Join(skipped, "; ") + ": no total decides, the reading stands"
	}
	return totalSilent, why
}
