package schema

import (
	"slices"
	"strings"
	"time"
)

// column is one column of a table: its name, its ClickHouse type on the
// portable (18.16) subset, an optional modern type used when the server
// supports it, and how to pull the column's values out of a slice of rows.
// DDL and INSERT statements are both derived from these lists, so a table's
// shape is written down exactly once.
type column[R any] struct {
	name   string
	typ    string
	modern string // type on servers with LowCardinality and codecs; "" = same as typ
	// transform and codec are the column's compression on servers with
	// codecs (see definition): a transform applied first (Delta, T64) and
	// the general-purpose codec after it; "" for the server's default.
	transform string
	codec     string
	extract   func(rows []R) any // the column's values, for one Append
	// appendRows, when set instead of extract, appends the column row by
	// row: clickhouse-go appends a whole Array column through reflection,
	// one reflect.Value and boxed element per item, but takes a typed
	// []string or []uint64 row without the reflection.
	appendRows func(dst rowAppender, rows []R) error
}

// rowAppender is the part of clickhouse-go's driver.BatchColumn appendRows
// uses.
type rowAppender interface {
	AppendRow(v any) error
}

func (c column[R]) typeFor(caps Capabilities) string {
	if c.modern != "" && caps.LowCardinality {
		return c.modern
	}
	return c.typ
}

// factsCodec compresses every column of span_facts on servers with column
// codecs (Capabilities.Codecs): ZSTD at level 3 against the server's
// default LZ4 took it from 101 to 55 bytes a span (make bench, 10M spans
// after OPTIMIZE … FINAL). Its reads are narrow and an hour or a few long
// (a report's open hour, the rollup, a tool's p95), so ZSTD's slower
// decompression costs them nothing measurable. spans takes ZSTD on its
// short columns only (rowsCodec, compact); content keeps LZ4.
const factsCodec = "ZSTD(3)"

// rowsCodec compresses the short columns of spans that reads over a
// window do not decode row by row (see compact) on servers with column
// codecs: ZSTD's entropy coding stores random ids (parent span, tool call,
// arguments' hash) at about half of LZ4's size, which finds repeats only,
// and the costs, counters and LowCardinality keys at a half to a third.
// Level 1: ZSTD decompresses at one speed whatever the level, and level 1
// costs the writes the least.
const rowsCodec = "ZSTD(1)"

// compact gives every column of cols but the ones named in keep the codec
// rowsCodec (after its transform, if any). keep are the columns a read over
// a window decompresses for every row, where ZSTD's slower decompression
// is paid at every search and page: the sort key and version (every FINAL
// merges by them), the times a window and its conditions read, and the long
// columns (names, attributes) that searches scan. Measured on the bench's
// 10M-span embedded store with ZSTD on those too: a frequent phrase over 7
// days 920 → 1,284 ms (p50), an intrinsic condition over 24 hours 75 → 98
// ms, for 21 bytes a span more (267.4 → 246.0 on the loaded set).
func compact[R any](cols []column[R], keep ...string) []column[R] {
	for i := range cols {
		if !slices.Contains(keep, cols[i].name) {
			cols[i].codec = rowsCodec
		}
	}
	return cols
}

// definition is the column's type on caps and, where the server has column
// codecs and the column has one, its CODEC clause: what CREATE TABLE, ADD
// COLUMN and MODIFY COLUMN write after the name. A column with only a
// transform (timeline, counts) is compressed by LZ4 after it, the server's
// default.
func (c column[R]) definition(caps Capabilities) string {
	d := c.typeFor(caps)
	if !caps.Codecs || c.transform == "" && c.codec == "" {
		return d
	}
	codec := c.codec
	if codec == "" {
		codec = "LZ4"
	}
	if c.transform != "" {
		codec = c.transform + ", " + codec
	}
	return d + " CODEC(" + codec + ")"
}

// timeline stores a time column by its differences (Delta) before it is
// compressed: in tables sorted by run or by time, consecutive rows' times
// are close, so the differences are small numbers (spans' start_ns with
// ZSTD: 6.6 → 4.9 bytes a span; with LZ4 7.1 → 6.7).
func timeline[R any](c column[R]) column[R] {
	c.transform = "Delta"
	return c
}

// counts stores a counter column (tokens, attempts) through T64 before it
// is compressed, which drops the high bytes every value of a block leaves
// zero (tokens: 10–25% smaller). Durations gained nothing from it.
func counts[R any](c column[R]) column[R] {
	c.transform = "T64"
	return c
}

func strCol[R any](name string, get func(*R) string) column[R] {
	return column[R]{name: name, typ: "String", extract: func(rows []R) any {
		out := make([]string, len(rows))
		for i := range rows {
			out[i] = get(&rows[i])
		}
		return out
	}}
}

// lowCol is a String column with few distinct values (kind, provider, model…),
// stored as LowCardinality(String) where the server supports it.
func lowCol[R any](name string, get func(*R) string) column[R] {
	c := strCol(name, get)
	c.modern = "LowCardinality(String)"
	return c
}

// dictionary stores a String or Array(String) column whose values repeat
// from span to span though they are not few — span names, attribute and
// resource keys — as LowCardinality where the server has it: each part
// keeps a dictionary of the values and a small index a row. Measured on the
// bench's 10M-span embedded store (2M spans of it copied): names 6.3 → 0.8
// bytes a span, attribute keys 9.8 → 1.4; a condition on the name reads
// 3–6 times faster (equality 18 → 6 ms, ILIKE 40 → 6.5 ms over 2M spans)
// and has() on the keys 46 → 31 ms. A name of many distinct values (an
// HTTP path with ids in it) costs about what a String does: the
// dictionary starts anew when it grows past its bound. The attribute
// values stay String: they are ids, numbers and messages.
//
// One trap: the 26.x engine's has() and indexOf() do not find "" in an
// Array(LowCardinality(String)); a search names no empty key (see
// ColumnKeysUnknown for the one column that would need it).
func dictionary[R any](c column[R]) column[R] {
	switch c.typ {
	case "String":
		c.modern = "LowCardinality(String)"
	case "Array(String)":
		c.modern = "Array(LowCardinality(String))"
	default:
		panic("schema: dictionary column " + c.name + " of type " + c.typ)
	}
	return c
}

func u64Col[R any](name string, get func(*R) uint64) column[R] {
	return column[R]{name: name, typ: "UInt64", extract: func(rows []R) any {
		out := make([]uint64, len(rows))
		for i := range rows {
			out[i] = get(&rows[i])
		}
		return out
	}}
}

func u32Col[R any](name string, get func(*R) uint32) column[R] {
	return column[R]{name: name, typ: "UInt32", extract: func(rows []R) any {
		out := make([]uint32, len(rows))
		for i := range rows {
			out[i] = get(&rows[i])
		}
		return out
	}}
}

func u8Col[R any](name string, get func(*R) uint8) column[R] {
	return column[R]{name: name, typ: "UInt8", extract: func(rows []R) any {
		out := make([]uint8, len(rows))
		for i := range rows {
			out[i] = get(&rows[i])
		}
		return out
	}}
}

func i8Col[R any](name string, get func(*R) int8) column[R] {
	return column[R]{name: name, typ: "Int8", extract: func(rows []R) any {
		out := make([]int8, len(rows))
		for i := range rows {
			out[i] = get(&rows[i])
		}
		return out
	}}
}

func f64Col[R any](name string, get func(*R) float64) column[R] {
	return column[R]{name: name, typ: "Float64", extract: func(rows []R) any {
		out := make([]float64, len(rows))
		for i := range rows {
			out[i] = get(&rows[i])
		}
		return out
	}}
}

func timeCol[R any](name string, get func(*R) time.Time) column[R] {
	return column[R]{name: name, typ: "DateTime", extract: func(rows []R) any {
		out := make([]time.Time, len(rows))
		for i := range rows {
			out[i] = get(&rows[i])
		}
		return out
	}}
}

func strsCol[R any](name string, get func(*R) []string) column[R] {
	return column[R]{name: name, typ: "Array(String)", appendRows: func(dst rowAppender, rows []R) error {
		return appendArrays(dst, rows, get)
	}}
}

func i16sCol[R any](name string, get func(*R) []int16) column[R] {
	return column[R]{name: name, typ: "Array(Int16)", appendRows: func(dst rowAppender, rows []R) error {
		return appendArrays(dst, rows, get)
	}}
}

func u64sCol[R any](name string, get func(*R) []uint64) column[R] {
	return column[R]{name: name, typ: "Array(UInt64)", appendRows: func(dst rowAppender, rows []R) error {
		return appendArrays(dst, rows, get)
	}}
}

// appendArrays appends an Array column row by row, each row as a slice of
// pointers to its elements: clickhouse-go hands every element of a plain
// []T to its element column as an interface, which allocates a copy of
// each string (and of each uint64 above 255) — one allocation per array
// element, the most numerous of the INSERT path — while a pointer fits in
// the interface as it is. The pointers' slice is one per call, reused from
// row to row.
func appendArrays[R, T any](dst rowAppender, rows []R, get func(*R) []T) error {
	var ptrs []*T
	for i := range rows {
		v := get(&rows[i])
		ptrs = ptrs[:0]
		for j := range v {
			ptrs = append(ptrs, &v[j])
		}
		if err := dst.AppendRow(ptrs); err != nil {
			return err
		}
	}
	return nil
}

// spanColumns is the spans table, in order: the short columns compressed
// by rowsCodec; the key, the version, the times and the long columns (the
// name, the attributes' and the resource's values) keep LZ4. The
// attributes' and the resource's keys are dictionaries (see dictionary)
// whose rows are small numbers: ZSTD(1) stores those at 1.4 bytes a span
// against LZ4's 3.9, and has() read them faster than the text keys in LZ4
// (31 against 46 ms over 2M spans).
var spanColumns = compact([]column[Span]{
	strCol("project", func(s *Span) string { return s.Project }),
	strCol("trace_id", func(s *Span) string { return s.TraceID }),
	strCol("span_id", func(s *Span) string { return s.SpanID }),
	strCol("parent_span_id", func(s *Span) string { return s.ParentSpanID }),
	timeline(timeCol("start", func(s *Span) time.Time { return s.Start })),
	timeline(u64Col("start_ns", func(s *Span) uint64 { return s.StartNs })),
	timeline(u64Col("end_ns", func(s *Span) uint64 { return s.EndNs })),
	u64Col("duration_ns", func(s *Span) uint64 { return s.DurationNs }),
	dictionary(strCol("name", func(s *Span) string { return s.Name })),
	lowCol("kind", func(s *Span) string { return s.Kind }),
	lowCol("status", func(s *Span) string { return s.Status }),
	strCol("status_message", func(s *Span) string { return s.StatusMessage }),
	lowCol("service", func(s *Span) string { return s.Service }),
	lowCol("scope_name", func(s *Span) string { return s.ScopeName }),
	lowCol("scope_version", func(s *Span) string { return s.ScopeVersion }),
	lowCol("span_type", func(s *Span) string { return s.SpanType }),
	lowCol("operation", func(s *Span) string { return s.Operation }),
	lowCol("provider", func(s *Span) string { return s.Provider }),
	lowCol("request_model", func(s *Span) string { return s.RequestModel }),
	lowCol("response_model", func(s *Span) string { return s.ResponseModel }),
	lowCol("model", func(s *Span) string { return s.Model }),
	lowCol("agent_name", func(s *Span) string { return s.AgentName }),
	strCol("agent_id", func(s *Span) string { return s.AgentID }),
	strCol("conversation_id", func(s *Span) string { return s.ConversationID }),
	strCol("user_id", func(s *Span) string { return s.UserID }),
	lowCol("task_name", func(s *Span) string { return s.TaskName }),
	lowCol("tool_name", func(s *Span) string { return s.ToolName }),
	strCol("tool_call_id", func(s *Span) string { return s.ToolCallID }),
	lowCol("tool_type", func(s *Span) string { return s.ToolType }),
	counts(u32Col("attempt", func(s *Span) uint32 { return s.Attempt })),
	strCol("step_id", func(s *Span) string { return s.StepID }),
	strCol("args_hash", func(s *Span) string { return s.ArgsHash }),
	strsCol("finish_reasons", func(s *Span) []string { return s.FinishReasons }),
	lowCol("error_type", func(s *Span) string { return s.ErrorType }),
	f64Col("ttfc_ms", func(s *Span) float64 { return s.TTFCMs }),
	counts(u64Col("input_tokens", func(s *Span) uint64 { return s.InputTokens })),
	counts(u64Col("cache_read_tokens", func(s *Span) uint64 { return s.CacheReadTokens })),
	counts(u64Col("cache_write_tokens", func(s *Span) uint64 { return s.CacheWriteTokens })),
	counts(u64Col("output_tokens", func(s *Span) uint64 { return s.OutputTokens })),
	counts(u64Col("reasoning_tokens", func(s *Span) uint64 { return s.ReasoningTokens })),
	lowCol("usage_mode", func(s *Span) string { return s.UsageMode }),
	u8Col("usage_unreconciled", func(s *Span) uint8 { return s.UsageUnreconciled }),
	u8Col("usage_record", func(s *Span) uint8 { return s.UsageRecord }),
	f64Col("cost_input", func(s *Span) float64 { return s.CostInput }),
	f64Col("cost_cache_read", func(s *Span) float64 { return s.CostCacheRead }),
	f64Col("cost_cache_write", func(s *Span) float64 { return s.CostCacheWrite }),
	f64Col("cost_output", func(s *Span) float64 { return s.CostOutput }),
	f64Col("cost_total", func(s *Span) float64 { return s.CostTotal }),
	lowCol("cost_source", func(s *Span) string { return s.CostSource }),
	lowCol("cost_confidence", func(s *Span) string { return s.CostConfidence }),
	lowCol("price_entry", func(s *Span) string { return s.PriceEntry }),
	lowCol("price_version", func(s *Span) string { return s.PriceVersion }),
	dictionary(strsCol("attr_keys", func(s *Span) []string { return s.AttrKeys })),
	strsCol("attr_values", func(s *Span) []string { return s.AttrValues }),
	columnKeysCol(),
	dictionary(strsCol("resource_keys", func(s *Span) []string { return s.ResourceKeys })),
	strsCol("resource_values", func(s *Span) []string { return s.ResourceValues }),
	strsCol("event_names", func(s *Span) []string { return s.EventNames }),
	u64sCol("event_time_ns", func(s *Span) []uint64 { return s.EventTimeNs }),
	strsCol("event_attrs", func(s *Span) []string { return s.EventAttrs }),
	strCol("links_json", func(s *Span) string { return s.LinksJSON }),
	timeline(timeCol("ingested_at", func(s *Span) time.Time { return s.IngestedAt })),
	u64Col("version", func(s *Span) uint64 { return s.Version }),
}, "project", "trace_id", "span_id", "version", "start", "start_ns", "end_ns", "duration_ns",
	"name", "attr_values", "resource_values")

// contentColumns is the content table, in order. Its columns keep LZ4: but
// for the values, which a content search scans, they are its key, version
// and start, which every read of a window decodes.
var contentColumns = []column[Content]{
	strCol("project", func(c *Content) string { return c.Project }),
	strCol("trace_id", func(c *Content) string { return c.TraceID }),
	strCol("span_id", func(c *Content) string { return c.SpanID }),
	timeline(timeCol("start", func(c *Content) time.Time { return c.Start })),
	lowCol("kind", func(c *Content) string { return c.Kind }),
	lowCol("source_key", func(c *Content) string { return c.SourceKey }),
	strCol("value", func(c *Content) string { return c.Value }),
	u8Col("truncated", func(c *Content) uint8 { return c.Truncated }),
	u64Col("version", func(c *Content) uint64 { return c.Version }),
}

// columnKeysCol is spans.column_keys: a few keys of a small vocabulary
// (LowCardinality where the server has it), defaulting to
// [ColumnKeysUnknown] in the rows written before the column existed. Every
// insert writes it.
func columnKeysCol() column[Span] {
	c := strsCol("column_keys", func(s *Span) []string { return s.ColumnKeys })
	c.typ = "Array(String) DEFAULT ['" + ColumnKeysUnknown + "']"
	c.modern = "Array(LowCardinality(String)) DEFAULT ['" + ColumnKeysUnknown + "']"
	return c
}

func columnDDL[R any](cols []column[R], caps Capabilities) string {
	var b strings.Builder
	for i, c := range cols {
		if i > 0 {
			b.WriteString(",\n  ")
		}
		b.WriteString(c.name)
		b.WriteByte(' ')
		b.WriteString(c.definition(caps))
	}
	return b.String()
}

func columnNames[R any](cols []column[R]) string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.name
	}
	return strings.Join(names, ", ")
}

// SpanColumnNames lists the spans table's columns in table order, for
// readers that select whole rows into Span.
func SpanColumnNames() string { return columnNames(spanColumns) }

// ContentColumnNames lists the content table's columns in table order.
func ContentColumnNames() string { return columnNames(contentColumns) }
