package ingest

import (
	"encoding/json"
	"strings"

	"github.com/tallyhq/tally/ingest/wire"
)

// rawBuckets are the cache and reasoning counts found in a provider's own
// usage object, which some instrumentations export only as a JSON (or
// Python repr) string beside their flat token attributes:
//   - the Vercel AI SDK 5: ai.response.providerMetadata
//     ({"anthropic":{"usage":{…},"cacheCreationInputTokens":N}},
//     {"google":{"usageMetadata":{…}}}, {"bedrock":{"usage":{…}}});
//   - Logfire: gen_ai.usage.raw (usage.model_dump(), since 4.29) and
//     response_data ({"message":…,"usage":{…}});
//   - LiteLLM: metadata.usage_object (str(usage), a Python repr).
type rawBuckets struct {
	cacheRead, cacheWrite, reasoning uint64
	// uncached is the input without cache, known when the object is in
	// Anthropic's or Bedrock's shape (input counted apart from the cache).
	uncached    uint64
	hasUncached bool
	// candidates is Gemini's candidatesTokenCount: output without thoughts.
	candidates    uint64
	hasCandidates bool
	// total is the object's own total (Gemini's totalTokenCount, which
	// counts thoughts apart from candidates; OpenAI's total_tokens;
	// Bedrock's totalTokens), evidence for whether output includes
	// reasoning.
	total    uint64
	hasTotal bool
	totalKey string // the member it came from
	source   string // the attribute key it came from
}

// rawUsage looks for a provider usage object on the span and reads its
// cache and reasoning counts; ok is false when there is none. An object
// that holds only a total is returned when no other object holds more.
func (n *normalizer) rawUsage() (rawBuckets, bool) {
	var totalOnly rawBuckets
	for _, f := range [...]field{fAIProviderMeta, fUsageRaw, fLiteLLMUsage, fLogfireResp} {
		fd, ok := n.first(f)
		if !ok || fd.h.act != "" || fd.h.v.Type() != wire.ValueStr {
			continue
		}
		text := fd.h.v.Str()
		if f == fLiteLLMUsage {
			text = pythonReprToJSON(text)
		}
		var obj map[string]any
		if json.Unmarshal([]byte(text), &obj) != nil {
			continue
		}
		switch f {
		case fAIProviderMeta:
			obj = providerMetadataUsage(obj)
		case fLogfireResp:
			obj, _ = obj["usage"].(map[string]any)
		}
		if obj == nil {
			continue
		}
		b, found := usageObjectBuckets(obj)
		if found {
			b.source = fd.h.key
			return b, true
		}
		if b.hasTotal && !totalOnly.hasTotal {
			totalOnly = rawBuckets{total: b.total, hasTotal: true, totalKey: b.totalKey, source: fd.h.key}
		}
	}
	return totalOnly, totalOnly.hasTotal
}

// providerMetadataUsage flattens the Vercel AI SDK's providerMetadata into
// one usage object: Anthropic's raw usage plus its cacheCreationInputTokens,
// Google's usageMetadata, Bedrock's usage.
func providerMetadataUsage(meta map[string]any) map[string]any {
	if a, ok := meta["anthropic"].(map[string]any); ok {
		u, _ := a["usage"].(map[string]any)
		if u == nil {
			u = map[string]any{}
		}
		if w, ok := a["cacheCreationInputTokens"]; ok && w != nil {
			u["cache_creation_input_tokens"] = w
		}
		return u
	}
	if g, ok := meta["google"].(map[string]any); ok {
		u, _ := g["usageMetadata"].(map[string]any)
		return u
	}
	if b, ok := meta["bedrock"].(map[string]any); ok {
		u, _ := b["usage"].(map[string]any)
		return u
	}
	return nil
}

// usageObjectBuckets reads the cache and reasoning counts of a usage object
// in any of the providers' shapes: Anthropic (cache_read_input_tokens,
// cache_creation_input_tokens), OpenAI chat (prompt_tokens_details.
// cached_tokens, completion_tokens_details.reasoning_tokens, and LiteLLM's
// prompt_tokens_details.cache_creation_tokens), OpenAI responses
// (input_tokens_details, output_tokens_details), Gemini
// (cachedContentTokenCount, thoughtsTokenCount) and Bedrock
// (cacheReadInputTokens, cacheWriteInputTokens).
func usageObjectBuckets(u map[string]any) (rawBuckets, bool) {
	var b rawBuckets
	found := false
	take := func(dst *uint64, v any) {
		if f, ok := v.(float64); ok {
			if c, ok := floatCount(f); ok {
				if c > *dst {
					*dst = c
				}
				found = true
			}
		}
	}
	// Anthropic (input_tokens beside cache_*_input_tokens) and Bedrock
	// (inputTokens beside cache*InputTokens) count input apart from cache;
	// OpenAI's responses object also has input_tokens, but inclusive and
	// without those keys.
	for _, shape := range [...][3]string{
		{"input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"},
		{"inputTokens", "cacheReadInputTokens", "cacheWriteInputTokens"},
	} {
		_, read := u[shape[1]]
		_, write := u[shape[2]]
		if f, ok := u[shape[0]].(float64); ok && (read || write) {
			if c, ok := floatCount(f); ok {
				b.uncached, b.hasUncached, found = c, true, true
			}
		}
	}
	take(&b.cacheRead, u["cache_read_input_tokens"])
	take(&b.cacheWrite, u["cache_creation_input_tokens"])
	take(&b.cacheRead, u["cachedContentTokenCount"])
	take(&b.reasoning, u["thoughtsTokenCount"])
	if f, ok := u["candidatesTokenCount"].(float64); ok {
		if c, ok := floatCount(f); ok {
			b.candidates, b.hasCandidates, found = c, true, true
		}
	}
	take(&b.cacheRead, u["cacheReadInputTokens"])
	take(&b.cacheWrite, u["cacheWriteInputTokens"])
	for _, k := range [...]string{"totalTokenCount", "total_tokens", "totalTokens", "total_token_count"} {
		if f, ok := u[k].(float64); ok {
			if c, ok := floatCount(f); ok {
				b.total, b.hasTotal, b.totalKey = c, true, k
				break
			}
		}
	}
	for _, k := range [...]string{"prompt_tokens_details", "input_tokens_details"} {
		if d, ok := u[k].(map[string]any); ok {
			take(&b.cacheRead, d["cached_tokens"])
			take(&b.cacheWrite, d["cache_creation_tokens"])
		}
	}
	for _, k := range [...]string{"completion_tokens_details", "output_tokens_details"} {
		if d, ok := u[k].(map[string]any); ok {
			take(&b.reasoning, d["reasoning_tokens"])
		}
	}
	return b, found
}

// pythonReprToJSON turns the repr of a Python dict of numbers, None, True
// and False (what LiteLLM writes for metadata.usage_object) into JSON. It is
// meant for usage objects only: strings holding quotes are not handled and
// then simply fail to parse.
func pythonReprToJSON(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			b.WriteByte('"')
		case strings.HasPrefix(s[i:], "None") && wordBoundary(s, i, 4):
			b.WriteString("null")
			i += 3
		case strings.HasPrefix(s[i:], "True") && wordBoundary(s, i, 4):
			b.WriteString("true")
			i += 3
		case strings.HasPrefix(s[i:], "False") && wordBoundary(s, i, 5):
			b.WriteString("false")
			i += 4
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// wordBoundary reports whether s[i:i+n] stands alone (not inside a word).
func wordBoundary(s string, i, n int) bool {
	isWord := func(c byte) bool {
		return c == '_' || c == '"' || c == '\'' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
	}
	return (i == 0 || !isWord(s[i-1])) && (i+n >= len(s) || !isWord(s[i+n]))
}
