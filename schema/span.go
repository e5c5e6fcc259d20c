// Package schema owns tally's ClickHouse tables: their DDL, migrations,
// server capability detection, and the row types written into them.
//
// Every other package reads or writes these tables only through the types and
// functions declared here (writes) or in package query (reads), so that a
// table's shape has exactly one owner.
package schema

import "time"

// Span types, derived from gen_ai.operation.name and its aliases (never from
// the OTLP span kind). See docs/instrumentations.md (alias chains).
const (
	TypeInference = "inference"
	TypeTool      = "tool"
	TypeAgent     = "agent"
	TypeOther     = "other"
)

// Usage modes record how the reported token numbers were interpreted.
const (
	UsageNone       = ""           // the span carried no usage
	UsageInclusive  = "inclusive"  // input already included cache read/write tokens
	UsageAdditive   = "additive"   // input excluded cache tokens; they were added
	UsageAggregated = "aggregated" // a parent span repeating its children's usage
)

// Cost sources record where a span's cost came from.
const (
	CostNone     = ""         // no usage and no client cost: nothing to price
	CostCatalog  = "catalog"  // computed from the price catalog at ingest
	CostClient   = "client"   // the span carried its own cost; it always wins
	CostUnpriced = "unpriced" // usage present but no catalog entry matched the model
)

// Cost confidences (Span.CostConfidence): how sure a span's cost is, given
// what its instrumentation can report (ingest.ConfidenceRules says which
// rule rated it, and why).
const (
	// ConfidenceExact: the bill as the provider computes it from what was
	// reported.
	ConfidenceExact = "exact"
	// ConfidenceUpperBound: the instrumentation never reports a count that
	// would lower the bill (no cached-input count: cache reads are billed
	// at the full input price).
	ConfidenceUpperBound = "upper_bound"
	// ConfidenceLowerBound: it never reports a count that would raise the
	// bill (reasoning tokens left out of output and not reported).
	ConfidenceLowerBound = "lower_bound"
	// ConfidenceCorrected: a known, deterministic instrumentation error
	// was undone by its reading.
	ConfidenceCorrected = "corrected"
	// ConfidenceApproximate: both an upper- and a lower-bound rule apply,
	// so the cost is neither bound.
	ConfidenceApproximate = "approximate"
	// ConfidenceUnpriced: the span has usage (or should have) but no price.
	ConfidenceUnpriced = "unpriced"
)

// Span statuses (Span.Status), from the OTLP status code: the one spelling
// of each for Go code; SQL compares the column with the same literals.
const (
	StatusUnset = "unset"
	StatusOK    = "ok"
	StatusError = "error"
)

// Span is one row of the spans table: one OTLP span, normalized. Identity is
// (Project, TraceID, SpanID); a row is immutable once written and a duplicate
// delivery of the same identity is collapsed by the table engine and by reads.
type Span struct {
	Project      string `ch:"project"`
	TraceID      string `ch:"trace_id"`       // 32 lowercase hex characters
	SpanID       string `ch:"span_id"`        // 16 lowercase hex characters
	ParentSpanID string `ch:"parent_span_id"` // empty for a root span

	Start      time.Time `ch:"start"`       // UTC, second precision (partition and range key)
	StartNs    uint64    `ch:"start_ns"`    // unix nanoseconds
	EndNs      uint64    `ch:"end_ns"`      // unix nanoseconds
	DurationNs uint64    `ch:"duration_ns"` // EndNs - StartNs

	Name          string `ch:"name"`
	Kind          string `ch:"kind"`   // internal, server, client, producer, consumer, unspecified
	Status        string `ch:"status"` // StatusUnset, StatusOK or StatusError
	StatusMessage string `ch:"status_message"`
	Service       string `ch:"service"`
	ScopeName     string `ch:"scope_name"`
	ScopeVersion  string `ch:"scope_version"`

	SpanType      string `ch:"span_type"` // TypeInference, TypeTool, TypeAgent, TypeOther
	Operation     string `ch:"operation"` // normalized gen_ai.operation.name
	Provider      string `ch:"provider"`
	RequestModel  string `ch:"request_model"`
	ResponseModel string `ch:"response_model"`
	Model         string `ch:"model"` // response model, else request model, else aliases

	AgentName      string `ch:"agent_name"`
	AgentID        string `ch:"agent_id"`
	ConversationID string `ch:"conversation_id"`
	UserID         string `ch:"user_id"`
	TaskName       string `ch:"task_name"` // task.name when the span carries it

	ToolName   string `ch:"tool_name"`
	ToolCallID string `ch:"tool_call_id"`
	ToolType   string `ch:"tool_type"`
	Attempt    uint32 `ch:"attempt"` // 0 when unknown; 1 first try; >=2 a retry
	StepID     string `ch:"step_id"`
	ArgsHash   string `ch:"args_hash"` // hex SHA-256 of canonical (sorted-key) tool arguments

	FinishReasons []string `ch:"finish_reasons"`
	ErrorType     string   `ch:"error_type"`
	TTFCMs        float64  `ch:"ttfc_ms"` // time to first chunk, 0 when not streamed/unknown

	InputTokens       uint64 `ch:"input_tokens"` // all input, cache read and write included
	CacheReadTokens   uint64 `ch:"cache_read_tokens"`
	CacheWriteTokens  uint64 `ch:"cache_write_tokens"`
	OutputTokens      uint64 `ch:"output_tokens"` // reasoning included
	ReasoningTokens   uint64 `ch:"reasoning_tokens"`
	UsageMode         string `ch:"usage_mode"`         // UsageNone, UsageInclusive, UsageAdditive, UsageAggregated
	UsageUnreconciled uint8  `ch:"usage_unreconciled"` // 1 when the reported numbers could not be reconciled
	// UsageRecord is 1 when the span records the usage of a call that
	// another span of the run made, and is not a call itself: Logfire's
	// "streaming response from …" log, which carries a streamed call's
	// usage beside the request span that has none. It counts for usage and
	// cost; the request span and it are one call (attribution/counted.go).
	UsageRecord uint8 `ch:"usage_record"`

	CostInput      float64 `ch:"cost_input"` // USD, uncached input only
	CostCacheRead  float64 `ch:"cost_cache_read"`
	CostCacheWrite float64 `ch:"cost_cache_write"`
	CostOutput     float64 `ch:"cost_output"`
	CostTotal      float64 `ch:"cost_total"`
	CostSource     string  `ch:"cost_source"` // CostNone, CostCatalog, CostClient, CostUnpriced
	// CostConfidence says how sure the cost is (Confidence*): "" when the
	// span has no cost, or was stored before tally rated costs.
	CostConfidence string `ch:"cost_confidence"`
	PriceEntry     string `ch:"price_entry"` // catalog entry id that priced the span
	PriceVersion   string `ch:"price_version"`

	AttrKeys   []string `ch:"attr_keys"` // remaining span attributes, values as strings (JSON for non-scalars)
	AttrValues []string `ch:"attr_values"`
	// ColumnKeys are the span attributes tally stored in columns instead
	// of AttrKeys, by the key the span sent (the winner of each alias
	// chain: gen_ai.request.model, ai.toolCall.name, …), sorted: what lets
	// a query name such an attribute as sent. Rows written before tally
	// recorded them hold ColumnKeysUnknown.
	ColumnKeys     []string `ch:"column_keys"`
	ResourceKeys   []string `ch:"resource_keys"`
	ResourceValues []string `ch:"resource_values"`

	EventNames  []string `ch:"event_names"`
	EventTimeNs []uint64 `ch:"event_time_ns"`
	EventAttrs  []string `ch:"event_attrs"` // one JSON object per event
	LinksJSON   string   `ch:"links_json"`  // JSON array of {trace_id, span_id}, "" when none

	IngestedAt time.Time `ch:"ingested_at"`
	// Version orders rewrites of the same span (a later reprice wins); the
	// writer sets it to the write time in nanoseconds when it is zero.
	Version uint64 `ch:"version"`
}

// Content kinds stored in the content table.
const (
	ContentToolArguments      = "tool.arguments"
	ContentToolResult         = "tool.result"
	ContentInputMessages      = "input.messages"
	ContentOutputMessages     = "output.messages"
	ContentSystemInstructions = "system_instructions"
	ContentToolDefinitions    = "tool.definitions"
)

// Content is one row of the content table: a large, sensitive value of a span
// (tool arguments and results, messages), kept apart so the spans table stays
// narrow. Keyed like the span it belongs to.
type Content struct {
	Project   string    `ch:"project"`
	TraceID   string    `ch:"trace_id"`
	SpanID    string    `ch:"span_id"`
	Start     time.Time `ch:"start"`
	Kind      string    `ch:"kind"` // one of the Content* constants
	SourceKey string    `ch:"source_key"`
	Value     string    `ch:"value"`
	Truncated uint8     `ch:"truncated"`
	Version   uint64    `ch:"version"` // set by the writer like Span.Version
}

// Fixed-width fields: a span's 9 uint64, 6 float64, a uint32, 2 uint8 and 2
// times; a content row's uint8, uint64 and time.
const (
	spanFixedBytes    = 9*8 + 6*8 + 4 + 2 + 2*12
	contentFixedBytes = 1 + 8 + 12
)

// DataBytes is the span's row data: the bytes of its strings plus its
// fixed-width fields (times as 12 bytes). It is what the row costs in memory
// per copy, Go's per-row overhead aside, and close to what it takes in an
// INSERT block and in the durable log; batches and blocks are bounded by it.
func (s *Span) DataBytes() int64 {
	n := spanFixedBytes + len(s.Project) + len(s.TraceID) + len(s.SpanID) + len(s.ParentSpanID) +
		len(s.Name) + len(s.Kind) + len(s.Status) + len(s.StatusMessage) + len(s.Service) +
		len(s.ScopeName) + len(s.ScopeVersion) +
		len(s.SpanType) + len(s.Operation) + len(s.Provider) + len(s.RequestModel) + len(s.ResponseModel) + len(s.Model) +
		len(s.AgentName) + len(s.AgentID) + len(s.ConversationID) + len(s.UserID) + len(s.TaskName) +
		len(s.ToolName) + len(s.ToolCallID) + len(s.ToolType) + len(s.StepID) + len(s.ArgsHash) +
		len(s.ErrorType) + len(s.UsageMode) + len(s.CostSource) + len(s.CostConfidence) + len(s.PriceEntry) + len(s.PriceVersion) +
		len(s.LinksJSON) + 8*len(s.EventTimeNs)
	for _, ss := range [...][]string{s.FinishReasons, s.AttrKeys, s.AttrValues, s.ColumnKeys, s.ResourceKeys, s.ResourceValues,
		s.EventNames, s.EventAttrs} {
		for _, v := range ss {
			n += len(v)
		}
	}
	return int64(n)
}

// ColumnKeysUnknown is the one element of Span.ColumnKeys in a row
// written before tally recorded them (the column's default): which
// attributes such a row's columns came from is not known. Not "": the
// 26.x engine's has() does not find "" in an Array(LowCardinality(String)).
const ColumnKeysUnknown = "?"

// DataBytes is the content row's data, measured like Span.DataBytes.
func (c *Content) DataBytes() int64 {
	return int64(contentFixedBytes + len(c.Project) + len(c.TraceID) + len(c.SpanID) + len(c.Kind) +
		len(c.SourceKey) + len(c.Value))
}

// Confidences lists the cost confidences, from the surest to the least
// sure, for the pages and the API's documentation (the UI's lib/vocab.js
// spells the same list; a test holds the two equal).
func Confidences() []string {
	return []string{ConfidenceExact, ConfidenceCorrected, ConfidenceUpperBound, ConfidenceLowerBound, ConfidenceApproximate, ConfidenceUnpriced}
}

// ConfidenceSpend is cost in USD by confidence (Span.CostConfidence), the
// columns cost_exact … cost_approximate of the run table and the cost
// rollup. Spend of spans stored before tally rated costs is in none of
// them.
type ConfidenceSpend struct {
	CostExact       float64 `ch:"cost_exact" json:"exact_usd"`
	CostUpperBound  float64 `ch:"cost_upper_bound" json:"upper_bound_usd"`
	CostLowerBound  float64 `ch:"cost_lower_bound" json:"lower_bound_usd"`
	CostCorrected   float64 `ch:"cost_corrected" json:"corrected_usd"`
	CostApproximate float64 `ch:"cost_approximate" json:"approximate_usd"`
}

// confidenceSpendColumns are the columns of a ConfidenceSpend a table's
// rows hold (get), in ConfidenceSpend's order.
func confidenceSpendColumns[R any](get func(*R) *ConfidenceSpend) []column[R] {
	return []column[R]{
		f64Col("cost_exact", func(r *R) float64 { return get(r).CostExact }),
		f64Col("cost_upper_bound", func(r *R) float64 { return get(r).CostUpperBound }),
		f64Col("cost_lower_bound", func(r *R) float64 { return get(r).CostLowerBound }),
		f64Col("cost_corrected", func(r *R) float64 { return get(r).CostCorrected }),
		f64Col("cost_approximate", func(r *R) float64 { return get(r).CostApproximate }),
	}
}

// confidenceSpendNames are confidenceSpendColumns' names.
func confidenceSpendNames() []string {
	var names []string
	for _, c := range confidenceSpendColumns(func(c *ConfidenceSpend) *ConfidenceSpend { return c }) {
		names = append(names, c.name)
	}
	return names
}

// Add adds the cost of one span (or a sum) rated level.
func (c *ConfidenceSpend) Add(level string, usd float64) {
	switch level {
	case ConfidenceExact:
		c.CostExact += usd
	case ConfidenceUpperBound:
		c.CostUpperBound += usd
	case ConfidenceLowerBound:
		c.CostLowerBound += usd
	case ConfidenceCorrected:
		c.CostCorrected += usd
	case ConfidenceApproximate:
		c.CostApproximate += usd
	}
}

// Merge adds o.
func (c *ConfidenceSpend) Merge(o ConfidenceSpend) {
	c.CostExact += o.CostExact
	c.CostUpperBound += o.CostUpperBound
	c.CostLowerBound += o.CostLowerBound
	c.CostCorrected += o.CostCorrected
	c.CostApproximate += o.CostApproximate
}

// Level is the confidence of a total made of this spend (total USD, with
// unpriced spans left out of it): exact when all of it is exact; a bound
// when every inexact part bounds the same way (an unpriced span leaves cost
// out, so it makes the total a lower bound); approximate when parts bound
// both ways; corrected when corrections are the only departure; unpriced
// when nothing was priced but something should have been; "" when nothing
// was rated (no cost, or spans stored before tally rated costs).
func (c ConfidenceSpend) Level(total float64, unpriced int) string {
	// Sums taken less the spans a run does not count (in SQL) can leave a
	// rounding residue where the true figure is 0: below a billionth of a
	// cent is nothing.
	some := func(v float64) bool { return v > 1e-12 }
	upper := some(c.CostUpperBound)
	lower := some(c.CostLowerBound) || unpriced > 0
	switch {
	case unpriced > 0 && !some(total):
		return ConfidenceUnpriced
	case some(c.CostApproximate) || upper && lower:
		return ConfidenceApproximate
	case upper:
		return ConfidenceUpperBound
	case lower:
		return ConfidenceLowerBound
	case some(c.CostCorrected):
		return ConfidenceCorrected
	case some(c.CostExact):
		return ConfidenceExact
	}
	return ""
}
