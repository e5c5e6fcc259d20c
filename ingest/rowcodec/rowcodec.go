// Package rowcodec is a compact, fast binary encoding of ingest.Batch: how a
// batch is stored as one record of the durable log (package ingest/wal).
//
// Layout (version 3): a version byte, then the spans (uvarint count, then
// each span's fields in declaration order of schema.Span), then the contents
// (uvarint count, then each schema.Content's fields in order). Strings are a
// uvarint length and the bytes; []string and []uint64 are a uvarint count and
// the elements; integers and floats are fixed-width little-endian (uint8 1
// byte, uint32 4, uint64 and float64 8); a time.Time is its Unix seconds
// (int64) and nanoseconds (uint32), and decodes in UTC.
//
// Decode checks every length against the bytes left before it allocates, so
// truncated or garbage input yields an error and never a panic or an
// outsized allocation. A new field of schema.Span or schema.Content must be
// added to encode and decode here with a new version byte; the round-trip
// test fails until it is. Version 1, written before Span.UsageRecord and
// Span.CostConfidence, lacks those two fields; Decode still reads it (a
// durable log written by an older tally), leaving them zero. Version 2,
// written before Span.ColumnKeys, lacks that field: Decode reads it (and
// version 1) as [schema.ColumnKeysUnknown], as the spans table does its
// older rows.
package rowcodec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/tallyhq/tally/ingest"
	"github.com/tallyhq/tally/schema"
)

// Version is the format version written as the first byte.
const Version byte = 3

// The older versions Decode reads: version1 without UsageRecord,
// CostConfidence and ColumnKeys, version2 without ColumnKeys.
const (
	version1 byte = 1
	version2 byte = 2
)

// Smallest encodings of one zero-valued row: every string and slice is one
// length byte. A span has 34 strings, 8 string slices and 1 uint64 slice
// (43 length bytes); 9 uint64, 6 float64, 1 uint32 and 2 uint8 (72+48+4+2 =
// 126 bytes); and 2 times (24 bytes): 193 (192 in version 2, 190 in
// version 1). A content row has 6 strings (6),
// a uint8 and a uint64 (9) and a time (12): 27. Decode uses them to bound
// counts before it allocates.
const (
	minSpanBytes    = 193
	minSpanBytesV2  = 192
	minSpanBytesV1  = 190
	minContentBytes = 27
)

// sliceChunk is how many elements the decoder allocates at a time for the
// []string and []uint64 fields it hands out.
const sliceChunk = 1024

// ErrMalformed is matched (errors.Is) by every error Decode returns.
var ErrMalformed = errors.New("rowcodec: malformed batch")

// Encode appends the encoding of b to dst and returns the extended slice.
func Encode(dst []byte, b ingest.Batch) []byte {
	return encode(dst, b, Version)
}

// encode is Encode in format version v (the tests write version 1 with it).
func encode(dst []byte, b ingest.Batch, v byte) []byte {
	dst = append(dst, v)
	dst = binary.AppendUvarint(dst, uint64(len(b.Spans)))
	for i := range b.Spans {
		dst = appendSpan(dst, &b.Spans[i], v)
	}
	dst = binary.AppendUvarint(dst, uint64(len(b.Contents)))
	for i := range b.Contents {
		dst = appendContent(dst, &b.Contents[i])
	}
	return dst
}

func appendSpan(d []byte, s *schema.Span, v byte) []byte {
	d = appendString(d, s.Project)
	d = appendString(d, s.TraceID)
	d = appendString(d, s.SpanID)
	d = appendString(d, s.ParentSpanID)

	d = appendTime(d, s.Start)
	d = binary.LittleEndian.AppendUint64(d, s.StartNs)
	d = binary.LittleEndian.AppendUint64(d, s.EndNs)
	d = binary.LittleEndian.AppendUint64(d, s.DurationNs)

	d = appendString(d, s.Name)
	d = appendString(d, s.Kind)
	d = appendString(d, s.Status)
	d = appendString(d, s.StatusMessage)
	d = appendString(d, s.Service)
	d = appendString(d, s.ScopeName)
	d = appendString(d, s.ScopeVersion)

	d = appendString(d, s.SpanType)
	d = appendString(d, s.Operation)
	d = appendString(d, s.Provider)
	d = appendString(d, s.RequestModel)
	d = appendString(d, s.ResponseModel)
	d = appendString(d, s.Model)

	d = appendString(d, s.AgentName)
	d = appendString(d, s.AgentID)
	d = appendString(d, s.ConversationID)
	d = appendString(d, s.UserID)
	d = appendString(d, s.TaskName)

	d = appendString(d, s.ToolName)
	d = appendString(d, s.ToolCallID)
	d = appendString(d, s.ToolType)
	d = binary.LittleEndian.AppendUint32(d, s.Attempt)
	d = appendString(d, s.StepID)
	d = appendString(d, s.ArgsHash)

	d = appendStrings(d, s.FinishReasons)
	d = appendString(d, s.ErrorType)
	d = appendFloat(d, s.TTFCMs)

	d = binary.LittleEndian.AppendUint64(d, s.InputTokens)
	d = binary.LittleEndian.AppendUint64(d, s.CacheReadTokens)
	d = binary.LittleEndian.AppendUint64(d, s.CacheWriteTokens)
	d = binary.LittleEndian.AppendUint64(d, s.OutputTokens)
	d = binary.LittleEndian.AppendUint64(d, s.ReasoningTokens)
	d = appendString(d, s.UsageMode)
	d = append(d, s.UsageUnreconciled)
	if v != version1 {
		d = append(d, s.UsageRecord)
	}

	d = appendFloat(d, s.CostInput)
	d = appendFloat(d, s.CostCacheRead)
	d = appendFloat(d, s.CostCacheWrite)
	d = appendFloat(d, s.CostOutput)
	d = appendFloat(d, s.CostTotal)
	d = appendString(d, s.CostSource)
	if v != version1 {
		d = appendString(d, s.CostConfidence)
	}
	d = appendString(d, s.PriceEntry)
	d = appendString(d, s.PriceVersion)

	d = appendStrings(d, s.AttrKeys)
	d = appendStrings(d, s.AttrValues)
	if v >= 3 {
		d = appendStrings(d, s.ColumnKeys)
	}
	d = appendStrings(d, s.ResourceKeys)
	d = appendStrings(d, s.ResourceValues)

	d = appendStrings(d, s.EventNames)
	d = appendUint64s(d, s.EventTimeNs)
	d = appendStrings(d, s.EventAttrs)
	d = appendString(d, s.LinksJSON)

	d = appendTime(d, s.IngestedAt)
	d = binary.LittleEndian.AppendUint64(d, s.Version)
	return d
}

func appendContent(d []byte, c *schema.Content) []byte {
	d = appendString(d, c.Project)
	d = appendString(d, c.TraceID)
	d = appendString(d, c.SpanID)
	d = appendTime(d, c.Start)
	d = appendString(d, c.Kind)
	d = appendString(d, c.SourceKey)
	d = appendString(d, c.Value)
	d = append(d, c.Truncated)
	d = binary.LittleEndian.AppendUint64(d, c.Version)
	return d
}

func appendString(d []byte, s string) []byte {
	d = binary.AppendUvarint(d, uint64(len(s)))
	return append(d, s...)
}

func appendStrings(d []byte, ss []string) []byte {
	d = binary.AppendUvarint(d, uint64(len(ss)))
	for _, s := range ss {
		d = appendString(d, s)
	}
	return d
}

func appendUint64s(d []byte, vs []uint64) []byte {
	d = binary.AppendUvarint(d, uint64(len(vs)))
	for _, v := range vs {
		d = binary.LittleEndian.AppendUint64(d, v)
	}
	return d
}

func appendFloat(d []byte, f float64) []byte {
	return binary.LittleEndian.AppendUint64(d, math.Float64bits(f))
}

func appendTime(d []byte, t time.Time) []byte {
	d = binary.LittleEndian.AppendUint64(d, uint64(t.Unix()))
	return binary.LittleEndian.AppendUint32(d, uint32(t.Nanosecond()))
}

// Decode parses an encoded batch. Nil slices and empty slices both decode
// as nil; times decode in UTC. The decoded strings share one copy of data
// (data itself may be reused once Decode returns), so keeping any one of
// them keeps that copy alive.
func Decode(data []byte) (ingest.Batch, error) {
	return AppendDecode(ingest.Batch{}, data)
}

// AppendDecode is Decode appending the decoded rows to dst's slices, so a
// caller coalescing many records into one batch decodes each in place
// instead of copying it there. On error it returns dst unchanged.
func AppendDecode(dst ingest.Batch, data []byte) (ingest.Batch, error) {
	if len(data) == 0 {
		return dst, fmt.Errorf("%w: empty input", ErrMalformed)
	}
	if !known(data[0]) {
		return dst, fmt.Errorf("%w: unknown version %d (this build reads %d to %d)", ErrMalformed, data[0], version1, Version)
	}
	// One copy of the input backs every decoded string (substrings of it),
	// instead of one allocation per string.
	d := decoder{buf: data, str: string(data), pos: 1, version: data[0]}
	b := dst
	if n := d.count(d.minSpan(), "spans"); n > 0 {
		b.Spans = slices.Grow(b.Spans, n)[:len(b.Spans)+n] // every field is set below
		for i := range b.Spans[len(dst.Spans):] {
			d.span(&b.Spans[len(dst.Spans)+i])
		}
	}
	if n := d.count(minContentBytes, "contents"); n > 0 {
		b.Contents = slices.Grow(b.Contents, n)[:len(b.Contents)+n]
		for i := range b.Contents[len(dst.Contents):] {
			d.content(&b.Contents[len(dst.Contents)+i])
		}
	}
	if d.err == nil && d.pos != len(d.buf) {
		d.fail(fmt.Sprintf("%d bytes after the batch", len(d.buf)-d.pos))
	}
	if d.err != nil {
		clear(b.Spans[len(dst.Spans):])
		clear(b.Contents[len(dst.Contents):])
		return ingest.Batch{Spans: b.Spans[:len(dst.Spans)], Contents: b.Contents[:len(dst.Contents)]}, d.err
	}
	return b, nil
}

// SpanCount is the number of spans an encoded batch holds, read from its
// header without decoding it (0 and an error when the header is damaged).
func SpanCount(data []byte) (int, error) {
	if len(data) == 0 || !known(data[0]) {
		return 0, fmt.Errorf("%w: bad header", ErrMalformed)
	}
	d := decoder{buf: data, pos: 1, version: data[0]}
	n := d.count(d.minSpan(), "spans")
	return n, d.err
}

// known reports whether Decode reads format version v.
func known(v byte) bool { return v == Version || v == version2 || v == version1 }

// decoder reads fields in order; the first problem sticks in err and every
// later read returns zero values.
type decoder struct {
	version byte
	buf     []byte
	str     string // a copy of buf
	pos     int
	// Backing arrays carved into the decoded slices, so a batch costs a few
	// allocations instead of one per slice.
	strs []string
	nums []uint64
	err  error
}

// minSpan is the smallest encoding of a span in d's version.
func (d *decoder) minSpan() int {
	switch d.version {
	case version1:
		return minSpanBytesV1
	case version2:
		return minSpanBytesV2
	}
	return minSpanBytes
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s at byte %d", ErrMalformed, what, d.pos)
	}
}

func (d *decoder) take(n int, what string) []byte {
	if d.err != nil {
		return nil
	}
	if n > len(d.buf)-d.pos {
		d.fail(fmt.Sprintf("%s needs %d bytes, %d left", what, n, len(d.buf)-d.pos))
		return nil
	}
	p := d.buf[d.pos : d.pos+n]
	d.pos += n
	return p
}

func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	if d.pos < len(d.buf) && d.buf[d.pos] < 0x80 { // one byte: most lengths
		d.pos++
		return uint64(d.buf[d.pos-1])
	}
	v, n := binary.Uvarint(d.buf[d.pos:])
	if n <= 0 {
		d.fail("bad length of " + what)
		return 0
	}
	d.pos += n
	return v
}

// count reads an element count and checks that the bytes left can hold that
// many elements of at least minBytes each.
func (d *decoder) count(minBytes int, what string) int {
	n := d.uvarint(what)
	if d.err != nil {
		return 0
	}
	if n > uint64(len(d.buf)-d.pos)/uint64(minBytes) {
		d.fail(fmt.Sprintf("%d %s cannot fit in %d bytes", n, what, len(d.buf)-d.pos))
		return 0
	}
	return int(n)
}

func (d *decoder) string(what string) string {
	n := d.uvarint(what)
	if d.err != nil || n == 0 {
		return ""
	}
	if n > uint64(len(d.buf)-d.pos) {
		d.fail(fmt.Sprintf("%s of %d bytes, %d left", what, n, len(d.buf)-d.pos))
		return ""
	}
	start := d.pos
	d.pos += int(n)
	return d.str[start:d.pos]
}

func (d *decoder) strings(what string) []string {
	n := d.count(1, what)
	if n == 0 {
		return nil
	}
	if len(d.strs) < n {
		d.strs = make([]string, max(n, sliceChunk))
	}
	ss := d.strs[:n:n]
	d.strs = d.strs[n:]
	for i := range ss {
		ss[i] = d.string(what)
	}
	return ss
}

func (d *decoder) uint64s(what string) []uint64 {
	n := d.count(8, what)
	if n == 0 {
		return nil
	}
	if len(d.nums) < n {
		d.nums = make([]uint64, max(n, sliceChunk))
	}
	vs := d.nums[:n:n]
	d.nums = d.nums[n:]
	for i := range vs {
		vs[i] = d.uint64(what)
	}
	return vs
}

func (d *decoder) uint8(what string) uint8 {
	p := d.take(1, what)
	if p == nil {
		return 0
	}
	return p[0]
}

func (d *decoder) uint32(what string) uint32 {
	p := d.take(4, what)
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(p)
}

func (d *decoder) uint64(what string) uint64 {
	p := d.take(8, what)
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(p)
}

func (d *decoder) float(what string) float64 { return math.Float64frombits(d.uint64(what)) }

func (d *decoder) time(what string) time.Time {
	sec := int64(d.uint64(what))
	nsec := d.uint32(what)
	if d.err != nil {
		return time.Time{}
	}
	if nsec >= 1e9 {
		d.fail(fmt.Sprintf("%s has %d nanoseconds", what, nsec))
		return time.Time{}
	}
	return time.Unix(sec, int64(nsec)).UTC()
}

func (d *decoder) span(s *schema.Span) {
	s.Project = d.string("project")
	s.TraceID = d.string("trace_id")
	s.SpanID = d.string("span_id")
	s.ParentSpanID = d.string("parent_span_id")

	s.Start = d.time("start")
	s.StartNs = d.uint64("start_ns")
	s.EndNs = d.uint64("end_ns")
	s.DurationNs = d.uint64("duration_ns")

	s.Name = d.string("name")
	s.Kind = d.string("kind")
	s.Status = d.string("status")
	s.StatusMessage = d.string("status_message")
	s.Service = d.string("service")
	s.ScopeName = d.string("scope_name")
	s.ScopeVersion = d.string("scope_version")

	s.SpanType = d.string("span_type")
	s.Operation = d.string("operation")
	s.Provider = d.string("provider")
	s.RequestModel = d.string("request_model")
	s.ResponseModel = d.string("response_model")
	s.Model = d.string("model")

	s.AgentName = d.string("agent_name")
	s.AgentID = d.string("agent_id")
	s.ConversationID = d.string("conversation_id")
	s.UserID = d.string("user_id")
	s.TaskName = d.string("task_name")

	s.ToolName = d.string("tool_name")
	s.ToolCallID = d.string("tool_call_id")
	s.ToolType = d.string("tool_type")
	s.Attempt = d.uint32("attempt")
	s.StepID = d.string("step_id")
	s.ArgsHash = d.string("args_hash")

	s.FinishReasons = d.strings("finish_reasons")
	s.ErrorType = d.string("error_type")
	s.TTFCMs = d.float("ttfc_ms")

	s.InputTokens = d.uint64("input_tokens")
	s.CacheReadTokens = d.uint64("cache_read_tokens")
	s.CacheWriteTokens = d.uint64("cache_write_tokens")
	s.OutputTokens = d.uint64("output_tokens")
	s.ReasoningTokens = d.uint64("reasoning_tokens")
	s.UsageMode = d.string("usage_mode")
	s.UsageUnreconciled = d.uint8("usage_unreconciled")
	s.UsageRecord = 0
	if d.version != version1 {
		s.UsageRecord = d.uint8("usage_record")
	}

	s.CostInput = d.float("cost_input")
	s.CostCacheRead = d.float("cost_cache_read")
	s.CostCacheWrite = d.float("cost_cache_write")
	s.CostOutput = d.float("cost_output")
	s.CostTotal = d.float("cost_total")
	s.CostSource = d.string("cost_source")
	s.CostConfidence = ""
	if d.version != version1 {
		s.CostConfidence = d.string("cost_confidence")
	}
	s.PriceEntry = d.string("price_entry")
	s.PriceVersion = d.string("price_version")

	s.AttrKeys = d.strings("attr_keys")
	s.AttrValues = d.strings("attr_values")
	if d.version >= 3 {
		s.ColumnKeys = d.strings("column_keys")
	} else {
		s.ColumnKeys = []string{schema.ColumnKeysUnknown}
	}
	s.ResourceKeys = d.strings("resource_keys")
	s.ResourceValues = d.strings("resource_values")

	s.EventNames = d.strings("event_names")
	s.EventTimeNs = d.uint64s("event_time_ns")
	s.EventAttrs = d.strings("event_attrs")
	s.LinksJSON = d.string("links_json")

	s.IngestedAt = d.time("ingested_at")
	s.Version = d.uint64("version")
}

func (d *decoder) content(c *schema.Content) {
	c.Project = d.string("project")
	c.TraceID = d.string("trace_id")
	c.SpanID = d.string("span_id")
	c.Start = d.time("start")
	c.Kind = d.string("kind")
	c.SourceKey = d.string("source_key")
	c.Value = d.string("value")
	c.Truncated = d.uint8("truncated")
	c.Version = d.uint64("version")
}
