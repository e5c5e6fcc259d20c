package pricing

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// litellmTierKey matches LiteLLM's long-context price keys, e.g.
// input_cost_per_token_above_200k_tokens.
var litellmTierKey = regexp.MustCompile(`^(input_cost_per_token|output_cost_per_token|cache_read_input_token_cost|cache_creation_input_token_cost)_above_([0-9]+)k_tokens$`)

// LoadLiteLLM reads a price file in LiteLLM's model_prices_and_context_window.json
// format: an object whose keys are model names and whose values carry
// per-token USD prices (input_cost_per_token, output_cost_per_token,
// cache_read_input_token_cost, cache_creation_input_token_cost,
// cache_creation_input_token_cost_above_1hr, and the *_above_<N>k_tokens
// long-context prices), litellm_provider and mode.
//
// Prices are converted to USD per million tokens. The "sample_spec" entry,
// modes other than chat, completion, responses and embedding (images, audio,
// rerank, …), entries without an input price and entries that do not decode
// are skipped. Several names that normalize to the same (provider, model) —
// claude-sonnet-4-5 and claude-sonnet-4-5-20250929 — yield one entry: the
// name with the fewest "/", then the shortest, then the first alphabetically.
// Entries have ID "litellm/<name>", version "litellm" and no effective date.
// Only a malformed document is an error.
func LoadLiteLLM(r io.Reader) ([]Entry, error) {
	var doc map[string]json.RawMessage
	dec := json.NewDecoder(r)
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("decode LiteLLM price file: %w", err)
	}
	names := make([]string, 0, len(doc))
	for name := range doc {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(
			cmp.Compare(strings.Count(a, "/"), strings.Count(b, "/")),
			cmp.Compare(len(a), len(b)),
			cmp.Compare(a, b),
		)
	})
	seen := make(map[string]bool)
	var entries []Entry
	for _, name := range names {
		if name == "sample_spec" || Normalize(name) == "" {
			continue
		}
		e, ok := litellmEntry(name, doc[name])
		if !ok {
			continue
		}
		// Dated duplicates (claude-sonnet-4-5-20250929) are skipped: LiteLLM
		// lists most snapshots again at their alias's prices, often with
		// fields missing (tiers); the snapshots priced apart are in the
		// built-in catalog, which a LiteLLM override of the alias leaves
		// alone (modelKey).
		key := normalizeProvider(e.Provider) + "\x00" + Normalize(name)
		if seen[key] {
			continue
		}
		seen[key] = true
		entries = append(entries, e)
	}
	slices.SortFunc(entries, func(a, b Entry) int { return cmp.Compare(a.Model, b.Model) })
	return entries, nil
}

// litellmEntry converts one LiteLLM model object; ok is false when it is not
// a priced text or embedding model or does not decode.
func litellmEntry(name string, raw json.RawMessage) (Entry, bool) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return Entry{}, false
	}
	mode := ModeChat
	switch litellmString(fields["mode"]) {
	case "", "chat", "completion", "responses":
	case "embedding":
		mode = ModeEmbedding
	default:
		return Entry{}, false
	}
	input, ok := litellmPerMillion(fields["input_cost_per_token"])
	if !ok {
		return Entry{}, false
	}
	p := Price{Input: input, CacheRead: input, CacheWrite: input}
	if v, ok := litellmPerMillion(fields["output_cost_per_token"]); ok {
		p.Output = v
	}
	if v, ok := litellmPerMillion(fields["cache_read_input_token_cost"]); ok {
		p.CacheRead = v
	}
	if v, ok := litellmPerMillion(fields["cache_creation_input_token_cost"]); ok {
		p.CacheWrite = v
	}
	p.CacheWrite1h = p.CacheWrite
	if v, ok := litellmPerMillion(fields["cache_creation_input_token_cost_above_1hr"]); ok {
		p.CacheWrite1h = v
	}

	tiers := make(map[uint64]*Tier)
	for key, value := range fields {
		m := litellmTierKey.FindStringSubmatch(key)
		if m == nil {
			continue
		}
		v, ok := litellmPerMillion(value)
		if !ok {
			continue
		}
		k, err := strconv.ParseUint(m[2], 10, 32)
		if err != nil || k == 0 {
			continue
		}
		threshold := k * 1000
		t := tiers[threshold]
		if t == nil {
			t = &Tier{AboveInputTokens: threshold, Price: Price{Input: -1, Output: p.Output, CacheRead: -1, CacheWrite: -1}}
			tiers[threshold] = t
		}
		switch m[1] {
		case "input_cost_per_token":
			t.Price.Input = v
		case "output_cost_per_token":
			t.Price.Output = v
		case "cache_read_input_token_cost":
			t.Price.CacheRead = v
		case "cache_creation_input_token_cost":
			t.Price.CacheWrite = v
		}
	}
	e := Entry{
		ID:       "litellm/" + name,
		Provider: normalizeProvider(litellmString(fields["litellm_provider"])),
		Model:    name,
		Mode:     mode,
		Price:    p,
		Version:  "litellm",
	}
	for _, t := range tiers {
		if t.Price.Input < 0 {
			continue // a tier without an input price cannot be applied
		}
		if t.Price.CacheRead < 0 {
			t.Price.CacheRead = t.Price.Input
		}
		if t.Price.CacheWrite < 0 {
			t.Price.CacheWrite = t.Price.Input
		}
		t.Price.CacheWrite1h = t.Price.CacheWrite
		e.Tiers = append(e.Tiers, *t)
	}
	slices.SortFunc(e.Tiers, func(a, b Tier) int { return cmp.Compare(a.AboveInputTokens, b.AboveInputTokens) })
	return e, true
}

func litellmString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return strings.TrimSpace(s)
}

// litellmPerMillion reads a per-token USD price (a JSON number, or a string
// holding one) and returns it per million tokens, rounded to 1e-9 USD so that
// binary fractions such as 3e-06 × 1e6 come out as 3.
func litellmPerMillion(raw json.RawMessage) (float64, bool) {
	if len(raw) == 0 {
		return 0, false
	}
	var text string
	var n json.Number
	switch {
	case json.Unmarshal(raw, &n) == nil:
		text = n.String()
	case json.Unmarshal(raw, &text) == nil:
	default:
		return 0, false
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
	if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return math.Round(v*1e15) / 1e9, true
}
