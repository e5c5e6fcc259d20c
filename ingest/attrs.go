package ingest

import (
	"slices"
	"strings"

	"github.com/tallyhq/tally/ingest/wire"
)

// hit is the first occurrence of a recognized key in one attribute map.
type hit struct {
	key string
	v   wire.Value
	act Action // privacy rule for key; a dropped key is a hit only for ArgsHash
}

// attrView indexes one attribute map (a span's or a resource's) by field, in
// one pass, so the alias chains resolve with array lookups.
type attrView struct {
	pos        [fieldCount]uint8 // 1-based index into hits; 0 = absent
	hits       []hit
	aggregated bool // a gen_ai.aggregated_usage.* key is present
}

// attrMeta is what load learned about each attribute of a span, by position,
// so that the second pass (building AttrKeys) neither classifies a key nor
// looks up its privacy rule again.
type attrMeta struct {
	f   field
	act Action
}

// load indexes m. When meta is non-nil it receives one entry per attribute,
// in order.
func (av *attrView) load(m []wire.KeyValue, priv *Privacy, meta *[]attrMeta) {
	av.pos = [fieldCount]uint8{}
	av.hits = av.hits[:0]
	av.aggregated = false
	if meta != nil {
		*meta = (*meta)[:0]
	}
	for i := range m {
		k, v := m[i].Key, m[i].Value
		f := fieldOf(k)
		act := priv.action(k)
		if meta != nil {
			*meta = append(*meta, attrMeta{f: f, act: act})
		}
		if act != ActionDrop && strings.HasPrefix(k, aggregatedUsagePrefix) {
			av.aggregated = true
		}
		if f == fNone || av.pos[f] != 0 {
			continue
		}
		av.hits = append(av.hits, hit{key: k, v: v, act: act})
		av.pos[f] = uint8(len(av.hits))
	}
}

// get returns the hit for f, or nil.
func (av *attrView) get(f field) *hit {
	if f == fNone || av.pos[f] == 0 {
		return nil
	}
	return &av.hits[av.pos[f]-1]
}

// present reports whether h carries a value worth taking: an empty value or
// an empty string is treated as absent, so the next alias decides.
func (h *hit) present() bool {
	switch h.v.Type() {
	case wire.ValueEmpty:
		return false
	case wire.ValueStr:
		return h.v.Str() != ""
	}
	return true
}

// kv is one key/value pair bound for a Keys/Values column pair.
type kv struct {
	k, v string
}

// splitSorted sorts pairs by key (stable, so duplicate keys keep their
// order) and returns them as two parallel slices, nil when empty.
func splitSorted(pairs []kv) (keys, values []string) {
	keys, values, _ = splitSortedWith(pairs, nil)
	return keys, values
}

// splitSortedWith is splitSorted with a third list, extra, copied into the
// same allocation (sorted there; nil when empty): a span's keys, values
// and column keys cost one allocation, not two.
func splitSortedWith(pairs []kv, extra []string) (keys, values, extraOut []string) {
	if len(pairs) == 0 && len(extra) == 0 {
		return nil, nil, nil
	}
	slices.SortStableFunc(pairs, func(a, b kv) int { return strings.Compare(a.k, b.k) })
	// One allocation backs the slices; capacities are capped so an append
	// to one can never overwrite the next.
	n, e := len(pairs), len(extra)
	all := make([]string, 2*n+e)
	if n > 0 {
		keys, values = all[:n:n], all[n:2*n:2*n]
		for i, p := range pairs {
			keys[i], values[i] = p.k, p.v
		}
	}
	if e > 0 {
		extraOut = all[2*n:]
		copy(extraOut, extra)
		slices.Sort(extraOut)
	}
	return keys, values, extraOut
}
