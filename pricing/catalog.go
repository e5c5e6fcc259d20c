// Package pricing holds tally's price catalog: per-token USD list prices of
// the models agents run, the matching of the model names spans carry to
// catalog entries, and the computation of a span's cost.
//
// The built-in catalog is the data file catalog.yaml, embedded in the binary
// (Builtin). Users add or replace entries with a price file in the same format
// (LoadFile) or with a LiteLLM model_prices_and_context_window.json
// (LoadLiteLLM), combined with Catalog.WithOverrides.
//
// Costs are computed from the span's reconciled usage buckets (input tokens
// include cache reads and writes, output tokens include reasoning):
//
//	input       = (input − cache read − cache write) × input price
//	cache read  = cache read × cache-read price
//	cache write = cache write × 5-minute cache-write price
//	output      = output × output price
//
// Cache writes are priced at the 5-minute TTL rate: spans do not say which TTL
// the caller asked for, and 5 minutes is the providers' default. Where a
// long-context tier applies (the call's input tokens, cache included, exceed
// the tier's threshold), every token of the call is priced at the tier's
// rates, as Anthropic and Google bill.
package pricing

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

//go:embed catalog.yaml
var builtinCatalog []byte

// Entry modes.
const (
	ModeChat      = "chat"      // text generation: chat, completion, responses
	ModeEmbedding = "embedding" // embeddings: input tokens only
)

// Price is a set of list prices in USD per million tokens.
type Price struct {
	Input        float64 // uncached input tokens
	Output       float64 // output tokens, reasoning included
	CacheRead    float64 // input tokens read from the prompt cache
	CacheWrite   float64 // input tokens written to the cache, 5-minute TTL
	CacheWrite1h float64 // input tokens written to the cache, 1-hour TTL
}

// Tier is a long-context price: when a call's input tokens (cache included)
// exceed AboveInputTokens, all of the call's tokens are priced at Price.
type Tier struct {
	AboveInputTokens uint64
	Price            Price
}

// Entry is one version of one model's prices. Entries sharing an ID are
// versions of the same model's prices, told apart by EffectiveFrom.
type Entry struct {
	ID       string   // stable identifier, recorded on the spans it prices
	Provider string   // gen_ai.provider.name value, e.g. "anthropic", "aws.bedrock"
	Model    string   // the provider's model name, as written in the price file
	Aliases  []string // other names of the same model
	Mode     string   // ModeChat or ModeEmbedding

	Price Price  // base prices
	Tiers []Tier // long-context tiers, ascending by threshold

	EffectiveFrom time.Time // prices apply from this instant (zero: always)
	Version       string    // recorded on the spans it prices

	// MinCachePrefixTokens is the shortest prompt the provider caches for
	// this model; 0 when unknown or when the model has no prompt caching.
	MinCachePrefixTokens int
	// NoPromptCache is true when the provider offers no prompt caching for
	// the model.
	NoPromptCache bool
}

// PriceFor returns the prices that apply to a call with inputTokens input
// tokens (cache read and write included): the highest tier whose threshold
// the input exceeds, else the base prices.
func (e Entry) PriceFor(inputTokens uint64) Price {
	p := e.Price
	for _, t := range e.Tiers {
		if inputTokens > t.AboveInputTokens {
			p = t.Price
		}
	}
	return p
}

func (e Entry) clone() Entry {
	e.Aliases = slices.Clone(e.Aliases)
	e.Tiers = slices.Clone(e.Tiers)
	return e
}

// Catalog is a set of price entries with the name index lookups use. It is
// immutable once built and safe for concurrent use.
type Catalog struct {
	asOf   string
	groups []*group         // catalog order
	byName map[string][]int // normalized model name or alias → indices into groups, catalog order
	// bySnapshot indexes the snapshot entries by Snapshot of their dated
	// name: an entry named after a dated snapshot (gpt-4o-2024-05-13) whose
	// undated name another entry of the same provider has (gpt-4o) — the
	// snapshot is priced unlike its alias, which Normalize, dropping the
	// date, cannot tell. (A dated name that is merely how a platform names
	// the model, Bedrock's anthropic.claude-…-20250929-v1:0, is no
	// snapshot entry.) named holds Snapshot of every dated name the catalog
	// has, for ThroughAlias.
	bySnapshot map[string][]int
	named      map[string]bool
	snapshots  map[int]bool // the groups bySnapshot holds
	matches    *matchCache  // (provider, model) → matched group, memoized: ingest's hot path
}

// group is all versions of one entry ID, ascending by EffectiveFrom.
// dated reports whether every name of the group is a dated snapshot's.
func (g *group) dated() bool {
	for _, v := range g.versions {
		for _, name := range append([]string{v.Model}, v.Aliases...) {
			if _, d := Snapshot(name); !d {
				return false
			}
		}
	}
	return true
}

type group struct {
	id       string
	provider string // normalized
	versions []Entry
}

// key is the (provider, normalized model) pair overrides match on.
func (g *group) key() string {
	return modelKey(g.provider, g.versions[len(g.versions)-1].Model)
}

// modelKey is what makes two entries the same model of one provider (a
// price file's entry overriding a built-in one, LiteLLM's duplicates): the
// normalized name, or for a dated snapshot its Snapshot form, so that an
// override of gpt-4o leaves the gpt-4o-2024-05-13 entry alone.
func modelKey(provider, model string) string {
	if snap, dated := Snapshot(model); dated {
		return provider + "\x00" + snap
	}
	return provider + "\x00" + Normalize(model)
}

// at returns the version in force at t: the latest one whose EffectiveFrom is
// not after t. A zero t selects the newest version; a t before every version
// selects the oldest (a span cannot predate its model, but clocks drift).
func (g *group) at(t time.Time) Entry {
	if t.IsZero() {
		return g.versions[len(g.versions)-1]
	}
	chosen := g.versions[0]
	for _, v := range g.versions[1:] {
		if !v.EffectiveFrom.After(t) {
			chosen = v
		}
	}
	return chosen
}

// Builtin parses the catalog embedded in the binary. Parse it once and keep
// the result: each call parses the file again.
func Builtin() (*Catalog, error) {
	asOf, entries, err := parseCatalog(bytes.NewReader(builtinCatalog))
	if err != nil {
		return nil, fmt.Errorf("builtin price catalog: %w", err)
	}
	return newCatalog(asOf, entries), nil
}

// LoadFile reads a user price file in the format of the built-in
// catalog.yaml (as_of is optional). Omitted IDs default to "provider/model",
// omitted versions to the effective date (or "unversioned").
func LoadFile(path string) ([]Entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open price file: %w", err)
	}
	defer f.Close()
	_, entries, err := parseCatalog(f)
	if err != nil {
		return nil, fmt.Errorf("price file %s: %w", path, err)
	}
	return entries, nil
}

// AsOf returns the date up to which the catalog's built-in prices were
// checked, as written in its as_of field.
func (c *Catalog) AsOf() string { return c.asOf }

// Entries returns copies of all entries, in catalog order, the versions of
// one ID ascending by effective date.
func (c *Catalog) Entries() []Entry {
	var out []Entry
	for _, g := range c.groups {
		for _, e := range g.versions {
			out = append(out, e.clone())
		}
	}
	return out
}

// WithOverrides returns a new catalog in which entries replace the receiver's
// entries with the same ID or the same (provider, normalized model); entries
// that replace nothing are added. An override replaces every version of what
// it matches: the override's own versions (entries sharing an ID) are then the
// only prices of that model. An override that says nothing about prompt
// caching (no minimum prefix, NoPromptCache false) keeps the replaced entry's.
// Entries without a model are ignored; a missing ID or version is defaulted as
// in LoadFile. The receiver is unchanged.
func (c *Catalog) WithOverrides(entries []Entry) *Catalog {
	var clean []Entry
	for _, e := range entries {
		if strings.TrimSpace(e.Model) == "" {
			continue
		}
		clean = append(clean, withDefaults(e.clone()))
	}
	overrides := groupEntries(clean)
	byID := make(map[string]*group)
	byKey := make(map[string]*group)
	for _, o := range overrides {
		byID[o.id] = o
		byKey[o.key()] = o
	}
	placed := make(map[*group]bool)
	var groups []*group
	for _, g := range c.groups {
		o := byID[g.id]
		if o == nil {
			o = byKey[g.key()]
		}
		if o == nil {
			groups = append(groups, g)
			continue
		}
		if !placed[o] {
			inheritCacheInfo(o, g)
			groups = append(groups, o)
			placed[o] = true
		}
	}
	for _, o := range overrides {
		if !placed[o] {
			groups = append(groups, o)
		}
	}
	return indexGroups(c.asOf, groups)
}

// inheritCacheInfo copies the replaced group's prompt-caching facts into the
// versions of o that state none.
func inheritCacheInfo(o, replaced *group) {
	latest := replaced.versions[len(replaced.versions)-1]
	for i := range o.versions {
		v := &o.versions[i]
		if v.MinCachePrefixTokens == 0 && !v.NoPromptCache {
			v.MinCachePrefixTokens = latest.MinCachePrefixTokens
			v.NoPromptCache = latest.NoPromptCache
		}
	}
}

func newCatalog(asOf string, entries []Entry) *Catalog {
	return indexGroups(asOf, groupEntries(entries))
}

// groupEntries gathers entries by ID, in order of first appearance, each
// group's versions sorted by effective date (a later entry with the same ID
// and date replaces an earlier one).
func groupEntries(entries []Entry) []*group {
	var groups []*group
	index := make(map[string]*group)
	for _, e := range entries {
		g := index[e.ID]
		if g == nil {
			g = &group{id: e.ID, provider: normalizeProvider(e.Provider)}
			index[e.ID] = g
			groups = append(groups, g)
		}
		replaced := false
		for i, v := range g.versions {
			if v.EffectiveFrom.Equal(e.EffectiveFrom) {
				g.versions[i] = e
				replaced = true
			}
		}
		if !replaced {
			g.versions = append(g.versions, e)
		}
	}
	for _, g := range groups {
		slices.SortStableFunc(g.versions, func(a, b Entry) int { return a.EffectiveFrom.Compare(b.EffectiveFrom) })
	}
	return groups
}

func indexGroups(asOf string, groups []*group) *Catalog {
	c := &Catalog{asOf: asOf, groups: groups, byName: make(map[string][]int), bySnapshot: make(map[string][]int),
		named: make(map[string]bool), snapshots: make(map[int]bool), matches: &matchCache{}}
	add := func(index map[string][]int, n string, i int) {
		if idx := index[n]; len(idx) > 0 && idx[len(idx)-1] == i {
			return
		}
		index[n] = append(index[n], i)
	}
	for i, g := range groups {
		for _, v := range g.versions {
			for _, name := range append([]string{v.Model}, v.Aliases...) {
				if n := Normalize(name); n != "" {
					add(c.byName, n, i)
				}
			}
		}
	}
	for i, g := range groups {
		for _, v := range g.versions {
			for _, name := range append([]string{v.Model}, v.Aliases...) {
				snap, dated := Snapshot(name)
				if !dated {
					continue
				}
				c.named[snap] = true
				if slices.ContainsFunc(c.byName[Normalize(name)], func(j int) bool {
					return j != i && groups[j].provider == g.provider && !groups[j].dated()
				}) {
					add(c.bySnapshot, snap, i)
					c.snapshots[i] = true
				}
			}
		}
	}
	return c
}

// The price file format.
type catalogFile struct {
	AsOf    string      `yaml:"as_of"`
	Entries []entryFile `yaml:"entries"`
}

type priceFile struct {
	Input        *float64 `yaml:"input"`
	Output       *float64 `yaml:"output"`
	CacheRead    *float64 `yaml:"cache_read"`
	CacheWrite   *float64 `yaml:"cache_write"`
	CacheWrite1h *float64 `yaml:"cache_write_1h"`
}

type tierFile struct {
	AboveInputTokens uint64 `yaml:"above_input_tokens"`
	priceFile        `yaml:",inline"`
}

type entryFile struct {
	ID                   string   `yaml:"id"`
	Provider             string   `yaml:"provider"`
	Model                string   `yaml:"model"`
	Aliases              []string `yaml:"aliases"`
	Mode                 string   `yaml:"mode"`
	priceFile            `yaml:",inline"`
	Tiers                []tierFile `yaml:"tiers"`
	EffectiveFrom        string     `yaml:"effective_from"`
	Version              string     `yaml:"version"`
	MinCachePrefixTokens int        `yaml:"min_cache_prefix_tokens"`
	NoPromptCache        bool       `yaml:"no_prompt_cache"`
}

// parseCatalog decodes and validates a price file. Unknown fields are errors,
// so that a misspelt price is not silently ignored.
func parseCatalog(r io.Reader) (string, []Entry, error) {
	dec := yaml.NewDecoder(r)
	dec.KnownFields(true)
	var file catalogFile
	if err := dec.Decode(&file); err != nil {
		if errors.Is(err, io.EOF) {
			return "", nil, nil
		}
		return "", nil, fmt.Errorf("decode: %w", err)
	}
	entries := make([]Entry, 0, len(file.Entries))
	keyOfID := make(map[string]string)
	seen := make(map[string]bool)
	for i, ef := range file.Entries {
		e, err := ef.entry()
		if err != nil {
			return "", nil, fmt.Errorf("entry %d (%s): %w", i+1, ef.Model, err)
		}
		key := normalizeProvider(e.Provider) + "/" + Normalize(e.Model)
		if prev, ok := keyOfID[e.ID]; ok && prev != key {
			return "", nil, fmt.Errorf("entry %d: id %q is used for two models (%s and %s)", i+1, e.ID, prev, key)
		}
		keyOfID[e.ID] = key
		version := e.ID + "@" + e.EffectiveFrom.String()
		if seen[version] {
			return "", nil, fmt.Errorf("entry %d: id %q has two entries effective from the same date", i+1, e.ID)
		}
		seen[version] = true
		entries = append(entries, e)
	}
	return file.AsOf, entries, nil
}

func (ef entryFile) entry() (Entry, error) {
	e := Entry{
		ID:                   strings.TrimSpace(ef.ID),
		Provider:             strings.TrimSpace(ef.Provider),
		Model:                strings.TrimSpace(ef.Model),
		Aliases:              ef.Aliases,
		Mode:                 strings.TrimSpace(ef.Mode),
		Version:              strings.TrimSpace(ef.Version),
		MinCachePrefixTokens: ef.MinCachePrefixTokens,
		NoPromptCache:        ef.NoPromptCache,
	}
	if e.Provider == "" {
		return Entry{}, errors.New("provider is required")
	}
	if Normalize(e.Model) == "" {
		return Entry{}, errors.New("model is required")
	}
	switch e.Mode {
	case "":
		e.Mode = ModeChat
	case ModeChat, ModeEmbedding:
	default:
		return Entry{}, fmt.Errorf("mode %q: want %s or %s", e.Mode, ModeChat, ModeEmbedding)
	}
	if e.MinCachePrefixTokens < 0 {
		return Entry{}, fmt.Errorf("min_cache_prefix_tokens %d is negative", e.MinCachePrefixTokens)
	}
	var err error
	if e.Price, err = ef.priceFile.price(e.Mode == ModeEmbedding); err != nil {
		return Entry{}, err
	}
	var previous uint64
	for i, tf := range ef.Tiers {
		if tf.AboveInputTokens == 0 || tf.AboveInputTokens <= previous {
			return Entry{}, fmt.Errorf("tier %d: above_input_tokens must be positive and ascending", i+1)
		}
		previous = tf.AboveInputTokens
		p, err := tf.priceFile.price(e.Mode == ModeEmbedding)
		if err != nil {
			return Entry{}, fmt.Errorf("tier %d: %w", i+1, err)
		}
		e.Tiers = append(e.Tiers, Tier{AboveInputTokens: tf.AboveInputTokens, Price: p})
	}
	if s := strings.TrimSpace(ef.EffectiveFrom); s != "" {
		if e.EffectiveFrom, err = parseEffective(s); err != nil {
			return Entry{}, err
		}
	}
	return withDefaults(e), nil
}

// price resolves omitted prices: cache reads and writes without a price of
// their own are billed as ordinary input; a 1-hour write without a price costs
// what a 5-minute write costs.
func (pf priceFile) price(embedding bool) (Price, error) {
	if pf.Input == nil {
		return Price{}, errors.New("input price is required")
	}
	if pf.Output == nil && !embedding {
		return Price{}, errors.New("output price is required")
	}
	p := Price{Input: *pf.Input, CacheRead: *pf.Input, CacheWrite: *pf.Input}
	if pf.Output != nil {
		p.Output = *pf.Output
	}
	if pf.CacheRead != nil {
		p.CacheRead = *pf.CacheRead
	}
	if pf.CacheWrite != nil {
		p.CacheWrite = *pf.CacheWrite
	}
	p.CacheWrite1h = p.CacheWrite
	if pf.CacheWrite1h != nil {
		p.CacheWrite1h = *pf.CacheWrite1h
	}
	for _, v := range []float64{p.Input, p.Output, p.CacheRead, p.CacheWrite, p.CacheWrite1h} {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return Price{}, fmt.Errorf("price %v is not a finite non-negative number", v)
		}
	}
	return p, nil
}

// parseEffective accepts a date (2006-01-02, midnight UTC) or an RFC 3339 time.
func parseEffective(s string) (time.Time, error) {
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t.UTC(), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("effective_from %q: want YYYY-MM-DD or RFC 3339", s)
	}
	return t.UTC(), nil
}

// withDefaults fills an entry's omitted ID, mode and version.
func withDefaults(e Entry) Entry {
	if e.ID == "" {
		e.ID = normalizeProvider(e.Provider) + "/" + strings.TrimSpace(e.Model)
	}
	if e.Mode == "" {
		e.Mode = ModeChat
	}
	if e.Version == "" {
		if e.EffectiveFrom.IsZero() {
			e.Version = "unversioned"
		} else {
			e.Version = e.EffectiveFrom.Format(time.DateOnly)
		}
	}
	return e
}
