package query

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/tallyhq/tally/support/canonical"
)

// Pair is one attribute: a key and its value as text.
type Pair struct {
	Key   string
	Value string
}

// Pairs are a span's attributes in stored order (ingest sorts them by key).
// They marshal to a JSON object, written straight from the two stored
// arrays: a map would cost an allocation per attribute and a sort of its
// keys per span, which for a 5,000-span run was a quarter of the answer's
// time.
type Pairs []Pair

// pairs zips stored keys and values; a key repeated next to itself (keys
// are sorted) keeps its last value, as a map would.
func pairs(keys, values []string) Pairs {
	n := min(len(keys), len(values))
	if n == 0 {
		return nil
	}
	out := make(Pairs, 0, n)
	for i := range n {
		if len(out) > 0 && out[len(out)-1].Key == keys[i] {
			out[len(out)-1].Value = values[i]
			continue
		}
		out = append(out, Pair{keys[i], values[i]})
	}
	return out
}

// MarshalJSON writes the pairs as one JSON object, in order, strings escaped
// as encoding/json escapes them (which then applies its HTML escaping to the
// result, as it does to a map's).
func (p Pairs) MarshalJSON() ([]byte, error) {
	size := 2
	for _, kv := range p {
		size += len(kv.Key) + len(kv.Value) + 6
	}
	return p.appendJSON(make([]byte, 0, size)), nil
}

// appendJSON appends the pairs as one JSON object, in order.
func (p Pairs) appendJSON(b []byte) []byte {
	b = append(b, '{')
	for i, kv := range p {
		if i > 0 {
			b = append(b, ',')
		}
		b = canonical.AppendString(b, kv.Key)
		b = append(b, ':')
		b = canonical.AppendString(b, kv.Value)
	}
	return append(b, '}')
}

// UnmarshalJSON reads a JSON object of strings, sorted by key.
func (p *Pairs) UnmarshalJSON(data []byte) error {
	var m map[string]string
	if err := json.Unmarshal(data, &m); err != nil {
		return fmt.Errorf("attributes: %w", err)
	}
	out := make(Pairs, 0, len(m))
	for k, v := range m {
		out = append(out, Pair{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	*p = out
	return nil
}
