// Package query holds every read of tally's tables: run lists, run trees,
// cost rollups, tool statistics and cache health. It is the one source of
// truth for the figures the API, UI, CLI and alerts show.
//
// Its readers are split by subject, each a small type over one shared core
// (the store and the safety configuration): RunReader (the run list,
// conversations, trace id lookup), TreeReader (one run: its tree, detail
// and spans), ContentReader (captured content and chats), FixtureReader
// (replay fixtures), ToolReader (tool and model statistics and the alert
// inputs over them), ReviewReader (safety signals and caps), OutcomeReader
// (outcomes, tasks, versions and comparisons), SpendReader (cost reports),
// RollupSource (what the hourly rollup reads), SettleSource (what the
// run table's settler reads) — and CostReader, the cost
// reports grouped by a price catalog, and cache health. Reader gathers
// them for the assembler; a consumer states the few methods it uses in an
// interface of its own (package api's Options, alerts.Source…).
package query

import (
	"errors"

	"github.com/tallyhq/tally/safety"
	"github.com/tallyhq/tally/schema"
)

// ErrNotFound is returned for a run that does not exist in the caller's project.
var ErrNotFound = errors.New("not found")

// core is what every subject reader shares: the store, the safety
// configuration the review of a run applies, and the reads more than one
// subject builds on (span reads, run lists, reviews), as its methods.
type core struct {
	store    *schema.Store
	effects  *safety.Policy   // tool effect classes; nil: declared by spans only
	limits   safety.Limits    // the signals' thresholds; zero: the defaults
	registry *safety.Registry // the tools agents may call; nil: none configured
	caps     *safety.Caps     // run budgets; nil: none
	// validator checks tool arguments within bounds, keeping compiled
	// schemas and verdicts across reviews (NewReader makes one with the
	// default limits unless WithValidator gives one).
	validator *safety.Validator
	// edges is the edge hour cache of cost reports (edgehour.go); nil: off.
	edges *edgeHours
	// opens is the open hour cache of cost reports (openhour.go); nil: off.
	opens *openHours
	// topEvery makes cost reports of every dimension read the rollup in
	// two steps (costtop.go), not only manyKeys' (tests: WithTwoStepRollup
	// in export_test.go).
	topEvery bool
	// liveShardRuns overrides liveShardRuns (tests: WithLiveShardRuns in
	// export_test.go); 0 keeps it.
	liveShardRuns int
	// classifyPartCalls overrides classifyPartCalls (tests:
	// WithClassifyPartCalls in export_test.go); 0 keeps it.
	classifyPartCalls int
	// windowExactRuns is the most runs a window report reads one by one
	// (WithWindowExactRuns); more, it reads the run rollup.
	windowExactRuns int
	// liveSummarySpans overrides maxLiveSummarySpans (tests:
	// WithLiveSummarySpans in export_test.go); 0 keeps it.
	liveSummarySpans int
	// liveLiteralRuns overrides maxLiveLiteralRuns (tests:
	// WithLiveLiteralRuns in export_test.go); 0 keeps it.
	liveLiteralRuns int
	// keyChunk overrides keyLookupChunk (tests: WithKeyLookupChunk in
	// export_test.go); 0 keeps it.
	keyChunk int
}

// The subject readers: each reads one subject's tables and answers its
// reports. The zero value is not usable; NewReader builds them.
type (
	// RunReader lists runs and conversations and resolves trace id prefixes.
	RunReader struct{ *core }
	// TreeReader reads one run: its summary and span tree, whole or in part.
	TreeReader struct{ *core }
	// ContentReader reads the content captured on spans and their chats.
	ContentReader struct{ *core }
	// FixtureReader builds a run's replay fixture.
	FixtureReader struct{ *core }
	// ToolReader answers tool and model statistics and the per-minute
	// figures alerts and /metrics read.
	ToolReader struct{ *core }
	// ReviewReader answers the safety review of a window's runs (signals)
	// and the caps observed per task.
	ReviewReader struct{ *core }
	// OutcomeReader reads outcomes and what is built on them: tasks
	// (pass@k, pass^k), versions and comparisons.
	OutcomeReader struct{ *core }
	// SpendReader answers cost reports by dimension (rollups for the hours
	// they hold, spans for the rest), without a price catalog's grouping.
	SpendReader struct{ *core }
	// RollupSource is what the hourly cost rollup reads of the spans.
	RollupSource struct{ *core }
)

// Reader gathers the subject readers over one store, for the assembler
// that hands each to its consumer; its methods are theirs.
type Reader struct {
	*core
	RunReader
	TreeReader
	ContentReader
	FixtureReader
	ToolReader
	ReviewReader
	OutcomeReader
	SpendReader
	RollupSource
	SettleSource
	SearchReader
}

// ReaderOption configures a Reader.
type ReaderOption func(*core)

// WithToolEffects gives the Reader the configured tool effect classes
// (tally serve --tool-effects), for the tool steps of run details and their
// safety signals.
func WithToolEffects(p *safety.Policy) ReaderOption { return func(r *core) { r.effects = p } }

// WithSignalLimits gives the Reader the safety signals' thresholds (tally
// serve --signal-min-backoff, --signal-max-repeats).
func WithSignalLimits(l safety.Limits) ReaderOption { return func(r *core) { r.limits = l } }

// WithToolRegistry sets the tools each project's agents may call (tally
// serve --tool-registry): a call of any other is an unknown_tool signal.
func WithToolRegistry(reg *safety.Registry) ReaderOption { return func(r *core) { r.registry = reg } }

// WithRunCaps sets the run budgets (tally serve --run-cap) budget_exceeded
// signals check.
func WithRunCaps(c *safety.Caps) ReaderOption { return func(r *core) { r.caps = c } }

// WithValidator sets the validator of tool arguments, and so its limits
// (tally serve --validation-max-steps, --validation-max-run-time,
// --validation-max-schema-bytes).
func WithValidator(v *safety.Validator) ReaderOption { return func(r *core) { r.validator = v } }

// NewReader returns the readers over the store.
func NewReader(store *schema.Store, opts ...ReaderOption) *Reader {
	c := &core{store: store, edges: newEdgeHours(DefaultEdgeHourSpans), opens: newOpenHours(DefaultEdgeHourSpans),
		windowExactRuns: DefaultWindowExactRuns}
	for _, o := range opts {
		o(c)
	}
	if c.validator == nil {
		c.validator = safety.NewValidator(safety.ValidationLimits{})
	}
	return &Reader{core: c, RunReader: RunReader{c}, TreeReader: TreeReader{c}, ContentReader: ContentReader{c},
		FixtureReader: FixtureReader{c}, ToolReader: ToolReader{c}, ReviewReader: ReviewReader{c},
		OutcomeReader: OutcomeReader{c}, SpendReader: SpendReader{c}, RollupSource: RollupSource{c}, SettleSource: SettleSource{c},
		SearchReader: SearchReader{c}}
}
