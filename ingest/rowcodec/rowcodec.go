// Package rowcodec is a compact, fast binary encoding of ingest.Batch: how a
// batch is stored as one record of the durable log (package ingest/wal).
//
// Layout (version 4): a version byte, the record's size written out (uint64:
// its length had it written every string out, as version 3 did, which is
// what its rows hold decoded, for the drain's memory bounds), then the spans
// (uvarint count, then each span's fields in declaration order of
// schema.Span), then the contents (uvarint count, then each
// schema.Content's fields in order). []string and
// []uint64 are a uvarint count and the elements; integers and floats are
// fixed-width little-endian (uint8 1 byte, uint32 4, uint64 and float64 8); a
// time.Time is its Unix seconds (int64) and nanoseconds (uint32), and
// decodes in UTC.
//
// A string is a uvarint tag: 0 is the empty string; 1 to 4 name one of the
// last four strings written literally in the same field of the record's
// earlier rows (for an element of a []string, the element at the same index
// of one of the field's last four slices); a larger tag is a literal of
// tag−4 bytes, which then takes the place of the oldest of the four. A
// batch's rows repeat most of their strings (the project, service, scope,
// attribute keys, resource, trace id, model), so a record of a 512-span
// request is 2–3 times smaller than with every string written out, and
// costs the durable log's write(2) and the drain's memory that much less;
// the decoded strings that repeat share their bytes. Versions 1 to 3 wrote
// every string as its uvarint length and bytes, and no size.
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
	"math/bits"
	"slices"
	"time"

	"github.com/tallyhq/tally/ingest"
	"github.com/tallyhq/tally/schema"
)

// Version is the format version written as the first byte.
const Version byte = 4

// The older versions Decode reads: version1 without UsageRecord,
// CostConfidence and ColumnKeys, version2 without ColumnKeys, version3
// with every string written out.
const (
	version1 byte = 1
	version2 byte = 2
	version3 byte = 3
)

// refsSince is the first version whose strings may refer to earlier ones
// (refs) and whose header holds the size written out.
const refsSince byte = 4

// recent is how many earlier strings of a field (or slices of a []string
// field) a version-4 string tag may refer to. The encoder compares a string
// with each of them, so it stays small: a field's values in one batch
// mostly alternate among a few (an agent's root, chat and tool spans).
const recent = 4

// The string and []string fields of one row, each with its own
// references: a span has 34 strings and 8 slices, a content row 6 strings.
const (
	spanStrings    = 34
	contentStrings = 6
	spanSlices     = 8
)

// stringRing is the last recent literal strings of one field.
type stringRing struct {
	vals [recent]string
	next uint8
}

// push makes s the newest value, in place of the oldest.
func (r *stringRing) push(s string) {
	r.vals[r.next] = s
	r.next = (r.next + 1) % recent
}

// sliceRing is the last recent slices of one []string field.
type sliceRing struct {
	vals [recent][]string
	next uint8
}

// push makes ss the newest slice, in place of the oldest.
func (r *sliceRing) push(ss []string) {
	r.vals[r.next] = ss
	r.next = (r.next + 1) % recent
}

// refs is the references of one record, on both sides: the encoder and the
// decoder keep the same rings in the same order, so a tag means the same
// string to both. The row's fields take their rings in the order they are
// written (field counts, not names, so a version's layout alone decides).
type refs struct {
	strs   [spanStrings + contentStrings]stringRing
	slices [spanSlices]sliceRing
	// str and slice are the rings the row's next string and []string
	// fields take.
	str, slice int
}

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

// encode is Encode in format version v (the tests write the older versions
// with it).
func encode(dst []byte, b ingest.Batch, v byte) []byte {
	start := len(dst)
	e := encoder{d: append(dst, v), v: v, refer: v >= refsSince}
	if e.refer {
		e.d = binary.LittleEndian.AppendUint64(e.d, 0) // the size written out, set below
	}
	e.d = binary.AppendUvarint(e.d, uint64(len(b.Spans)))
	for i := range b.Spans {
		e.row(0)
		e.span(&b.Spans[i])
	}
	e.d = binary.AppendUvarint(e.d, uint64(len(b.Contents)))
	for i := range b.Contents {
		e.row(spanStrings)
		e.content(&b.Contents[i])
	}
	if e.refer {
		out := len(e.d) - start - sizeBytes + e.saved
		binary.LittleEndian.PutUint64(e.d[start+1:], uint64(out))
	}
	return e.d
}

// sizeBytes is the length of version 4's size field.
const sizeBytes = 8

// maxSize is the largest size Header reports, so that sums of a few sizes
// stay positive.
const maxSize = 1 << 56

// uvarintLen is the length of x as a uvarint.
func uvarintLen(x int) int { return (bits.Len64(uint64(x)|1) + 6) / 7 }

// encoder appends one record's rows to d in format version v.
type encoder struct {
	d     []byte
	v     byte
	refer bool // version 4: strings may refer to earlier ones (refs)
	refs  refs
	// saved is how many bytes the references and literal tags took less
	// than writing every string out (the size field adds it back).
	saved int
}

// row starts a row whose string fields take the rings from first on.
func (e *encoder) row(first int) {
	e.refs.str, e.refs.slice = first, 0
}

// string appends s as the row's next string field.
func (e *encoder) string(s string) {
	if !e.refer {
		e.d = appendString(e.d, s)
		return
	}
	r := &e.refs.strs[e.refs.str]
	e.refs.str++
	if s == "" {
		e.d = append(e.d, 0)
		return
	}
	for k := range r.vals {
		if r.vals[k] == s {
			e.ref(k, s)
			return
		}
	}
	e.literal(s)
	r.push(s)
}

// strings appends ss as the row's next []string field.
func (e *encoder) strings(ss []string) {
	if !e.refer {
		e.d = appendStrings(e.d, ss)
		return
	}
	r := &e.refs.slices[e.refs.slice]
	e.refs.slice++
	e.d = binary.AppendUvarint(e.d, uint64(len(ss)))
	hint := 0 // the slice the last element matched: its neighbour likely does too
next:
	for i, s := range ss {
		if s == "" {
			e.d = append(e.d, 0)
			continue
		}
		if prev := r.vals[hint]; i < len(prev) && prev[i] == s {
			e.ref(hint, s)
			continue
		}
		for k := range r.vals {
			if prev := r.vals[k]; k != hint && i < len(prev) && prev[i] == s {
				e.ref(k, s)
				hint = k
				continue next
			}
		}
		e.literal(s)
	}
	r.push(ss)
}

// ref appends the tag of s as the field's k-th earlier string.
func (e *encoder) ref(k int, s string) {
	e.d = append(e.d, byte(k+1))
	e.saved += uvarintLen(len(s)) + len(s) - 1
}

// literal appends s as a version-4 literal: its tag, then its bytes.
func (e *encoder) literal(s string) {
	e.d = binary.AppendUvarint(e.d, uint64(len(s))+recent)
	e.d = append(e.d, s...)
	e.saved += uvarintLen(len(s)) - uvarintLen(len(s)+recent)
}

func (e *encoder) uint8(v uint8)      { e.d = append(e.d, v) }
func (e *encoder) uint32(v uint32)    { e.d = binary.LittleEndian.AppendUint32(e.d, v) }
func (e *encoder) uint64(v uint64)    { e.d = binary.LittleEndian.AppendUint64(e.d, v) }
func (e *encoder) float(f float64)    { e.d = appendFloat(e.d, f) }
func (e *encoder) time(t time.Time)   { e.d = appendTime(e.d, t) }
func (e *encoder) uint64s(v []uint64) { e.d = appendUint64s(e.d, v) }

func (e *encoder) span(s *schema.Span) {
	e.string(s.Project)
	e.string(s.TraceID)
	e.string(s.SpanID)
	e.string(s.ParentSpanID)

	e.time(s.Start)
	e.uint64(s.StartNs)
	e.uint64(s.EndNs)
	e.uint64(s.DurationNs)

	e.string(s.Name)
	e.string(s.Kind)
	e.string(s.Status)
	e.string(s.StatusMessage)
	e.string(s.Service)
	e.string(s.ScopeName)
	e.string(s.ScopeVersion)

	e.string(s.SpanType)
	e.string(s.Operation)
	e.string(s.Provider)
	e.string(s.RequestModel)
	e.string(s.ResponseModel)
	e.string(s.Model)

	e.string(s.AgentName)
	e.string(s.AgentID)
	e.string(s.ConversationID)
	e.string(s.UserID)
	e.string(s.TaskName)

	e.string(s.ToolName)
	e.string(s.ToolCallID)
	e.string(s.ToolType)
	e.uint32(s.Attempt)
	e.string(s.StepID)
	e.string(s.ArgsHash)

	e.strings(s.FinishReasons)
	e.string(s.ErrorType)
	e.float(s.TTFCMs)

	e.uint64(s.InputTokens)
	e.uint64(s.CacheReadTokens)
	e.uint64(s.CacheWriteTokens)
	e.uint64(s.OutputTokens)
	e.uint64(s.ReasoningTokens)
	e.string(s.UsageMode)
	e.uint8(s.UsageUnreconciled)
	if e.v != version1 {
		e.uint8(s.UsageRecord)
	}

	e.float(s.CostInput)
	e.float(s.CostCacheRead)
	e.float(s.CostCacheWrite)
	e.float(s.CostOutput)
	e.float(s.CostTotal)
	e.string(s.CostSource)
	if e.v != version1 {
		e.string(s.CostConfidence)
	}
	e.string(s.PriceEntry)
	e.string(s.PriceVersion)

	e.strings(s.AttrKeys)
	e.strings(s.AttrValues)
	if e.v >= version3 {
		e.strings(s.ColumnKeys)
	}
	e.strings(s.ResourceKeys)
	e.strings(s.ResourceValues)

	e.strings(s.EventNames)
	e.uint64s(s.EventTimeNs)
	e.strings(s.EventAttrs)
	e.string(s.LinksJSON)

	e.time(s.IngestedAt)
	e.uint64(s.Version)
}

func (e *encoder) content(c *schema.Content) {
	e.string(c.Project)
	e.string(c.TraceID)
	e.string(c.SpanID)
	e.time(c.Start)
	e.string(c.Kind)
	e.string(c.SourceKey)
	e.string(c.Value)
	e.uint8(c.Truncated)
	e.uint64(c.Version)
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
	d := decoder{buf: data, str: string(data), pos: 1, version: data[0], refer: data[0] >= refsSince}
	if d.refer {
		d.uint64("size")
	}
	b := dst
	if n := d.count(d.minSpan(), "spans"); n > 0 {
		b.Spans = slices.Grow(b.Spans, n)[:len(b.Spans)+n] // every field is set below
		for i := range b.Spans[len(dst.Spans):] {
			d.row(0)
			d.span(&b.Spans[len(dst.Spans)+i])
		}
	}
	if n := d.count(minContentBytes, "contents"); n > 0 {
		b.Contents = slices.Grow(b.Contents, n)[:len(b.Contents)+n]
		for i := range b.Contents[len(dst.Contents):] {
			d.row(spanStrings)
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
	n, _, err := Header(data)
	return n, err
}

// Header reads an encoded batch's span count and its size written out (its
// length had it written every string out, as version 3 did: about what its
// rows hold decoded) without decoding it; a record of a version before 4 is
// written out, and gives its own length.
func Header(data []byte) (spans int, size int64, err error) {
	if len(data) == 0 || !known(data[0]) {
		return 0, 0, fmt.Errorf("%w: bad header", ErrMalformed)
	}
	d := decoder{buf: data, pos: 1, version: data[0]}
	size = int64(len(data))
	if d.version >= refsSince {
		size = int64(min(d.uint64("size"), maxSize)) // a damaged size cannot overflow a sum of sizes
	}
	spans = d.count(d.minSpan(), "spans")
	return spans, size, d.err
}

// known reports whether Decode reads format version v.
func known(v byte) bool { return v >= version1 && v <= Version }

// decoder reads fields in order; the first problem sticks in err and every
// later read returns zero values.
type decoder struct {
	version byte
	buf     []byte
	str     string // a copy of buf
	pos     int
	// Backing arrays carved into the decoded slices, so a batch costs a few
	// allocations instead of one per slice.
	strs  []string
	nums  []uint64
	refer bool // version 4: strings may refer to earlier ones (refs)
	refs  refs
	err   error
}

// row starts a row whose string fields take the rings from first on.
func (d *decoder) row(first int) {
	d.refs.str, d.refs.slice = first, 0
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

// string reads the row's next string field. A version-4 tag is resolved
// here and, for slices' elements, in strings: the two differ in where the
// earlier string is, and a shared helper (not inlined) cost the drain's
// decoding 10%.
func (d *decoder) string(what string) string {
	if !d.refer {
		return d.literal(d.uvarint(what), what)
	}
	r := &d.refs.strs[d.refs.str]
	d.refs.str++
	t := d.uvarint(what)
	switch {
	case d.err != nil || t == 0:
		return ""
	case t <= recent:
		s := r.vals[t-1]
		if s == "" {
			d.fail(fmt.Sprintf("%s refers to earlier string %d, which is not there", what, t))
		}
		return s
	}
	s := d.literal(t-recent, what)
	if d.err == nil {
		r.push(s)
	}
	return s
}

// literal reads a string of n bytes.
func (d *decoder) literal(n uint64, what string) string {
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
	var r *sliceRing
	if d.refer {
		r = &d.refs.slices[d.refs.slice]
		d.refs.slice++
	}
	n := d.count(1, what)
	if n == 0 {
		if r != nil {
			r.push(nil)
		}
		return nil
	}
	if len(d.strs) < n {
		d.strs = make([]string, max(n, sliceChunk))
	}
	ss := d.strs[:n:n]
	d.strs = d.strs[n:]
	for i := range ss {
		t := d.uvarint(what)
		switch {
		case r == nil:
			ss[i] = d.literal(t, what)
		case d.err != nil || t == 0:
		case t <= recent:
			if prev := r.vals[t-1]; i < len(prev) && prev[i] != "" {
				ss[i] = prev[i]
			} else {
				d.fail(fmt.Sprintf("%s element %d refers to earlier slice %d, which has none there", what, i, t))
			}
		default:
			ss[i] = d.literal(t-recent, what)
		}
	}
	if r != nil {
		r.push(ss)
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
