package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"unsafe"
)

// Decoder decodes protobuf ExportTraceServiceRequest bodies into Traces. It
// keeps its slices from one request to the next, so a warm decoder allocates
// only for nested (map and array) values. A Decoder is not safe for
// concurrent use; keep one per goroutine or in a sync.Pool.
//
// It accepts exactly the requests pdata's ptraceotlp.ExportRequest
// UnmarshalProto accepts, with the same meaning (last scalar wins, repeated
// embedded messages merge, deprecated instrumentation_library_spans used
// when scope_spans is absent, nesting bounded at pdata's depth of 100): the
// tag, varint and skip rules below follow pdata's internal/proto, not
// protowire, whose stricter field-number and varint checks would refuse
// requests pdata takes.
type Decoder struct {
	resources []ResourceSpans
	scopes    []ScopeSpans
	oldScopes []ScopeSpans // instrumentation_library_spans (field 1000)
	spans     []Span
	attrs     []KeyValue // span attributes
	resAttrs  []KeyValue
	events    []Event
	evAttrs   []KeyValue
	links     []Link
}

// maxKeptEntries bounds the slices a Decoder keeps between requests, so one
// huge request does not pin its memory for good.
const maxKeptEntries = 1 << 16

// Decode decodes body. The Traces and every string in it point into body
// and into d: they stay valid until the next Decode or Reset on d, and body
// must not change while they, or strings taken from them, are in use.
func (d *Decoder) Decode(body []byte) (Traces, error) {
	d.Reset()
	err := fields(body, func(num int32, wt int8, pos int) (int, error) {
		if num != 1 {
			return skip(body, pos, wt)
		}
		s, e, next, err := lenField(body, pos, wt, "ResourceSpans")
		if err != nil {
			return 0, err
		}
		return next, d.resourceSpans(body[s:e])
	})
	if err != nil {
		return Traces{}, err
	}
	return Traces{Resources: sub(d.resources, 0)}, nil
}

// Reset drops what the last Decode returned, so the decoder's slices no
// longer keep its body reachable; slices grown past maxKeptEntries are let go.
func (d *Decoder) Reset() {
	d.resources = reset(d.resources)
	d.scopes = reset(d.scopes)
	d.oldScopes = reset(d.oldScopes)
	d.spans = reset(d.spans)
	d.attrs = reset(d.attrs)
	d.resAttrs = reset(d.resAttrs)
	d.events = reset(d.events)
	d.evAttrs = reset(d.evAttrs)
	d.links = reset(d.links)
}

func reset[T any](s []T) []T {
	if cap(s) > maxKeptEntries {
		return nil
	}
	clear(s)
	return s[:0]
}

// sub is s[lo:] as a list of its own (capacity capped, so appends to the
// decoder's slice never reach it), nil when empty.
func sub[T any](s []T, lo int) []T {
	if len(s) == lo {
		return nil
	}
	return s[lo:len(s):len(s)]
}

func (d *Decoder) resourceSpans(b []byte) error {
	d.resources = append(d.resources, ResourceSpans{})
	rs := &d.resources[len(d.resources)-1]
	attrs0, scopes0, old0 := len(d.resAttrs), len(d.scopes), len(d.oldScopes)
	if err := fields(b, func(num int32, wt int8, pos int) (int, error) {
		var err error
		var s, e int
		switch num {
		case 1:
			if s, e, pos, err = lenField(b, pos, wt, "Resource"); err == nil {
				err = d.resource(b[s:e])
			}
		case 2:
			if s, e, pos, err = lenField(b, pos, wt, "ScopeSpans"); err == nil {
				d.scopes = append(d.scopes, ScopeSpans{})
				err = d.scopeSpans(b[s:e], &d.scopes[len(d.scopes)-1])
			}
		case 3:
			_, _, pos, err = lenField(b, pos, wt, "SchemaUrl")
		case 1000:
			if s, e, pos, err = lenField(b, pos, wt, "DeprecatedScopeSpans"); err == nil {
				d.oldScopes = append(d.oldScopes, ScopeSpans{})
				err = d.scopeSpans(b[s:e], &d.oldScopes[len(d.oldScopes)-1])
			}
		default:
			pos, err = skip(b, pos, wt)
		}
		return pos, err
	}); err != nil {
		return err
	}
	rs.Attributes = sub(d.resAttrs, attrs0)
	rs.Scopes = sub(d.scopes, scopes0)
	if rs.Scopes == nil { // pdata's MigrateTraces
		rs.Scopes = sub(d.oldScopes, old0)
	}
	return nil
}

// resource decodes a Resource; repeated ones merge, so their attributes
// join the same list.
func (d *Decoder) resource(b []byte) error {
	return fields(b, func(num int32, wt int8, pos int) (int, error) {
		var err error
		var s, e int
		switch num {
		case 1:
			if s, e, pos, err = lenField(b, pos, wt, "Attributes"); err == nil {
				d.resAttrs = append(d.resAttrs, KeyValue{})
				err = keyValue(b[s:e], 0, &d.resAttrs[len(d.resAttrs)-1])
			}
		case 2:
			pos, err = varintField(b, pos, wt, "DroppedAttributesCount")
		case 3:
			if s, e, pos, err = lenField(b, pos, wt, "EntityRefs"); err == nil {
				err = entityRef(b[s:e])
			}
		default:
			pos, err = skip(b, pos, wt)
		}
		return pos, err
	})
}

// entityRef checks an EntityRef, which tally does not read.
func entityRef(b []byte) error {
	return fields(b, func(num int32, wt int8, pos int) (int, error) {
		var err error
		switch num {
		case 1, 2, 3, 4:
			_, _, pos, err = lenField(b, pos, wt, "EntityRef")
		default:
			pos, err = skip(b, pos, wt)
		}
		return pos, err
	})
}

func (d *Decoder) scopeSpans(b []byte, ss *ScopeSpans) error {
	spans0 := len(d.spans)
	if err := fields(b, func(num int32, wt int8, pos int) (int, error) {
		var err error
		var s, e int
		switch num {
		case 1:
			if s, e, pos, err = lenField(b, pos, wt, "Scope"); err == nil {
				err = scope(b[s:e], ss)
			}
		case 2:
			if s, e, pos, err = lenField(b, pos, wt, "Spans"); err == nil {
				d.spans = append(d.spans, Span{})
				err = d.span(b[s:e], &d.spans[len(d.spans)-1])
			}
		case 3:
			_, _, pos, err = lenField(b, pos, wt, "SchemaUrl")
		default:
			pos, err = skip(b, pos, wt)
		}
		return pos, err
	}); err != nil {
		return err
	}
	ss.Spans = sub(d.spans, spans0)
	return nil
}

// scope decodes an InstrumentationScope into ss; its attributes are checked
// and dropped (tally does not read them).
func scope(b []byte, ss *ScopeSpans) error {
	return fields(b, func(num int32, wt int8, pos int) (int, error) {
		var err error
		var s, e int
		switch num {
		case 1:
			if s, e, pos, err = lenField(b, pos, wt, "Name"); err == nil {
				ss.Name = str(b[s:e])
			}
		case 2:
			if s, e, pos, err = lenField(b, pos, wt, "Version"); err == nil {
				ss.Version = str(b[s:e])
			}
		case 3:
			if s, e, pos, err = lenField(b, pos, wt, "Attributes"); err == nil {
				var kv KeyValue
				err = keyValue(b[s:e], 0, &kv)
			}
		case 4:
			pos, err = varintField(b, pos, wt, "DroppedAttributesCount")
		default:
			pos, err = skip(b, pos, wt)
		}
		return pos, err
	})
}

func (d *Decoder) span(b []byte, sp *Span) error {
	attrs0, events0, links0 := len(d.attrs), len(d.events), len(d.links)
	if err := fields(b, func(num int32, wt int8, pos int) (int, error) {
		var err error
		var s, e int
		var u uint64
		switch num {
		case 1:
			if s, e, pos, err = lenField(b, pos, wt, "TraceId"); err == nil {
				err = id(sp.TraceID[:], b[s:e], errTraceID)
			}
		case 2:
			if s, e, pos, err = lenField(b, pos, wt, "SpanId"); err == nil {
				err = id(sp.SpanID[:], b[s:e], errSpanID)
			}
		case 3:
			_, _, pos, err = lenField(b, pos, wt, "TraceState")
		case 4:
			if s, e, pos, err = lenField(b, pos, wt, "ParentSpanId"); err == nil {
				err = id(sp.ParentSpanID[:], b[s:e], errSpanID)
			}
		case 5:
			if s, e, pos, err = lenField(b, pos, wt, "Name"); err == nil {
				sp.Name = str(b[s:e])
			}
		case 6:
			if u, pos, err = varint(b, pos, wt, "Kind"); err == nil {
				sp.Kind = int32(u)
			}
		case 7:
			sp.Start, pos, err = fixed64(b, pos, wt, "StartTimeUnixNano")
		case 8:
			sp.End, pos, err = fixed64(b, pos, wt, "EndTimeUnixNano")
		case 9:
			if s, e, pos, err = lenField(b, pos, wt, "Attributes"); err == nil {
				d.attrs = append(d.attrs, KeyValue{})
				err = keyValue(b[s:e], 0, &d.attrs[len(d.attrs)-1])
			}
		case 10, 12, 14:
			pos, err = varintField(b, pos, wt, "Dropped*Count")
		case 11:
			if s, e, pos, err = lenField(b, pos, wt, "Events"); err == nil {
				d.events = append(d.events, Event{})
				err = d.event(b[s:e], &d.events[len(d.events)-1])
			}
		case 13:
			if s, e, pos, err = lenField(b, pos, wt, "Links"); err == nil {
				d.links = append(d.links, Link{})
				err = link(b[s:e], &d.links[len(d.links)-1])
			}
		case 15:
			if s, e, pos, err = lenField(b, pos, wt, "Status"); err == nil {
				err = status(b[s:e], sp)
			}
		case 16:
			_, pos, err = fixed32(b, pos, wt, "Flags")
		default:
			pos, err = skip(b, pos, wt)
		}
		return pos, err
	}); err != nil {
		return err
	}
	sp.Attributes = sub(d.attrs, attrs0)
	sp.Events = sub(d.events, events0)
	sp.Links = sub(d.links, links0)
	return nil
}

// status decodes a Status into sp; repeated ones merge.
func status(b []byte, sp *Span) error {
	return fields(b, func(num int32, wt int8, pos int) (int, error) {
		var err error
		var s, e int
		var u uint64
		switch num {
		case 2:
			if s, e, pos, err = lenField(b, pos, wt, "Message"); err == nil {
				sp.StatusMessage = str(b[s:e])
			}
		case 3:
			if u, pos, err = varint(b, pos, wt, "Code"); err == nil {
				sp.StatusCode = int32(u)
			}
		default:
			pos, err = skip(b, pos, wt)
		}
		return pos, err
	})
}

func (d *Decoder) event(b []byte, ev *Event) error {
	attrs0 := len(d.evAttrs)
	if err := fields(b, func(num int32, wt int8, pos int) (int, error) {
		var err error
		var s, e int
		switch num {
		case 1:
			ev.Time, pos, err = fixed64(b, pos, wt, "TimeUnixNano")
		case 2:
			if s, e, pos, err = lenField(b, pos, wt, "Name"); err == nil {
				ev.Name = str(b[s:e])
			}
		case 3:
			if s, e, pos, err = lenField(b, pos, wt, "Attributes"); err == nil {
				d.evAttrs = append(d.evAttrs, KeyValue{})
				err = keyValue(b[s:e], 0, &d.evAttrs[len(d.evAttrs)-1])
			}
		case 4:
			pos, err = varintField(b, pos, wt, "DroppedAttributesCount")
		default:
			pos, err = skip(b, pos, wt)
		}
		return pos, err
	}); err != nil {
		return err
	}
	ev.Attributes = sub(d.evAttrs, attrs0)
	return nil
}

// link decodes a Link; its attributes are checked and dropped.
func link(b []byte, l *Link) error {
	return fields(b, func(num int32, wt int8, pos int) (int, error) {
		var err error
		var s, e int
		switch num {
		case 1:
			if s, e, pos, err = lenField(b, pos, wt, "TraceId"); err == nil {
				err = id(l.TraceID[:], b[s:e], errTraceID)
			}
		case 2:
			if s, e, pos, err = lenField(b, pos, wt, "SpanId"); err == nil {
				err = id(l.SpanID[:], b[s:e], errSpanID)
			}
		case 3:
			_, _, pos, err = lenField(b, pos, wt, "TraceState")
		case 4:
			if s, e, pos, err = lenField(b, pos, wt, "Attributes"); err == nil {
				var kv KeyValue
				err = keyValue(b[s:e], 0, &kv)
			}
		case 5:
			pos, err = varintField(b, pos, wt, "DroppedAttributesCount")
		case 6:
			_, pos, err = fixed32(b, pos, wt, "Flags")
		default:
			pos, err = skip(b, pos, wt)
		}
		return pos, err
	})
}

// fields calls f for each field of message b, in order, with its number,
// wire type and the position of its value; f returns the position after
// the value. The first error stops the walk.
func fields(b []byte, f func(num int32, wt int8, pos int) (int, error)) error {
	for pos := 0; pos < len(b); {
		num, wt, p, err := consumeTag(b, pos)
		if err != nil {
			return err
		}
		if pos, err = f(num, wt, p); err != nil {
			return err
		}
	}
	return nil
}

// recursionLimit is pdata's bound on KeyValue / AnyValue / ArrayValue /
// KeyValueList nesting.
const recursionLimit = 100

var errDepth = errors.New("proto: exceeded max recursion depth")

// keyValue decodes a KeyValue into kv at nesting depth; a repeated value
// field merges into the value decoded so far.
func keyValue(b []byte, depth int, kv *KeyValue) error {
	if depth >= recursionLimit {
		return errDepth
	}
	depth++
	return fields(b, func(num int32, wt int8, pos int) (int, error) {
		var err error
		var s, e int
		switch num {
		case 1:
			if s, e, pos, err = lenField(b, pos, wt, "Key"); err == nil {
				kv.Key = str(b[s:e])
			}
		case 2:
			if s, e, pos, err = lenField(b, pos, wt, "Value"); err == nil {
				err = anyValue(b[s:e], depth, &kv.Value)
			}
		case 3:
			pos, err = varintField(b, pos, wt, "KeyStrindex")
		default:
			pos, err = skip(b, pos, wt)
		}
		return pos, err
	})
}

// anyValue decodes an AnyValue into v: each oneof field replaces v whole.
func anyValue(b []byte, depth int, v *Value) error {
	if depth >= recursionLimit {
		return errDepth
	}
	depth++
	return fields(b, func(num int32, wt int8, pos int) (int, error) {
		var err error
		var s, e int
		var u uint64
		switch num {
		case 1:
			if s, e, pos, err = lenField(b, pos, wt, "StringValue"); err == nil {
				*v = Value{typ: ValueStr, str: str(b[s:e])}
			}
		case 2:
			if u, pos, err = varint(b, pos, wt, "BoolValue"); err == nil {
				*v = BoolValue(u != 0)
			}
		case 3:
			if u, pos, err = varint(b, pos, wt, "IntValue"); err == nil {
				*v = Value{typ: ValueInt, num: u}
			}
		case 4:
			if u, pos, err = fixed64(b, pos, wt, "DoubleValue"); err == nil {
				*v = Value{typ: ValueDouble, num: u}
			}
		case 5:
			if s, e, pos, err = lenField(b, pos, wt, "ArrayValue"); err == nil {
				var elems []KeyValue
				elems, err = list(b[s:e], depth, true)
				*v = Value{typ: ValueSlice, kvs: elems}
			}
		case 6:
			if s, e, pos, err = lenField(b, pos, wt, "KvlistValue"); err == nil {
				var kvs []KeyValue
				kvs, err = list(b[s:e], depth, false)
				*v = Value{typ: ValueMap, kvs: kvs}
			}
		case 7:
			if s, e, pos, err = lenField(b, pos, wt, "BytesValue"); err == nil {
				*v = Value{typ: ValueBytes, str: str(b[s:e])}
			}
		case 8:
			// string_value_strindex (profiles' string table): pcommon
			// reports it as an empty value.
			if pos, err = varintField(b, pos, wt, "StringValueStrindex"); err == nil {
				*v = Value{}
			}
		default:
			pos, err = skip(b, pos, wt)
		}
		return pos, err
	})
}

// list decodes an ArrayValue (elements true: AnyValue entries) or a
// KeyValueList (KeyValue entries).
func list(b []byte, depth int, elements bool) ([]KeyValue, error) {
	if depth >= recursionLimit {
		return nil, errDepth
	}
	depth++
	var out []KeyValue
	err := fields(b, func(num int32, wt int8, pos int) (int, error) {
		if num != 1 {
			return skip(b, pos, wt)
		}
		s, e, next, err := lenField(b, pos, wt, "Values")
		if err != nil {
			return 0, err
		}
		out = append(out, KeyValue{})
		if elements {
			return next, anyValue(b[s:e], depth, &out[len(out)-1].Value)
		}
		return next, keyValue(b[s:e], depth, &out[len(out)-1])
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

var (
	errTraceID = errors.New("trace id must be empty or 16 bytes")
	errSpanID  = errors.New("span id must be empty or 8 bytes")
)

// id copies an id field into dst: empty means all zero, any other length
// than dst's is an error, as in pdata.
func id(dst, src []byte, wrong error) error {
	switch len(src) {
	case 0:
		clear(dst)
	case len(dst):
		copy(dst, src)
	default:
		return wrong
	}
	return nil
}

// str is b as a string without a copy: it points into the request body.
func str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// The wire types.
const (
	wireVarint     = 0
	wireI64        = 1
	wireLen        = 2
	wireStartGroup = 3
	wireEndGroup   = 4
	wireI32        = 5
)

var (
	errOverflow   = errors.New("proto: integer overflow")
	errNegLength  = errors.New("proto: negative length found during unmarshaling")
	errEndOfGroup = errors.New("proto: unexpected end of group")
)

func wrongType(wt int8, field string) error {
	return fmt.Errorf("proto: wrong wireType = %d for field %s", wt, field)
}

// consumeTag reads a tag as pdata does: the field number is the tag's upper
// bits truncated to int32, and must be positive.
func consumeTag(b []byte, pos int) (num int32, wt int8, next int, err error) {
	tag, next, err := consumeVarint(b, pos)
	if err != nil {
		return 0, 0, 0, err
	}
	num, wt = int32(tag>>3), int8(tag&7)
	if num <= 0 {
		return 0, 0, 0, fmt.Errorf("proto: illegal field=%d (tag=%d, pos=%d)", num, tag, next)
	}
	return num, wt, next, nil
}

func consumeVarint(b []byte, pos int) (uint64, int, error) {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if shift >= 64 {
			return 0, 0, errOverflow
		}
		if pos >= len(b) {
			return 0, 0, io.ErrUnexpectedEOF
		}
		c := b[pos]
		pos++
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, pos, nil
		}
	}
}

// consumeLen reads a length prefix and returns the bounds of what follows.
func consumeLen(b []byte, pos int) (start, end int, err error) {
	n, pos, err := consumeVarint(b, pos)
	if err != nil {
		return 0, 0, err
	}
	length := int(n)
	if length < 0 {
		return 0, 0, errNegLength
	}
	end = pos + length
	if end < 0 || end > len(b) {
		return 0, 0, io.ErrUnexpectedEOF
	}
	return pos, end, nil
}

// lenField reads a length-delimited field of the given name.
func lenField(b []byte, pos int, wt int8, field string) (start, end, next int, err error) {
	if wt != wireLen {
		return 0, 0, 0, wrongType(wt, field)
	}
	start, end, err = consumeLen(b, pos)
	return start, end, end, err
}

func varint(b []byte, pos int, wt int8, field string) (uint64, int, error) {
	if wt != wireVarint {
		return 0, 0, wrongType(wt, field)
	}
	return consumeVarint(b, pos)
}

func varintField(b []byte, pos int, wt int8, field string) (int, error) {
	_, next, err := varint(b, pos, wt, field)
	return next, err
}

func fixed64(b []byte, pos int, wt int8, field string) (uint64, int, error) {
	if wt != wireI64 {
		return 0, 0, wrongType(wt, field)
	}
	if pos+8 > len(b) {
		return 0, 0, io.ErrUnexpectedEOF
	}
	return binary.LittleEndian.Uint64(b[pos:]), pos + 8, nil
}

func fixed32(b []byte, pos int, wt int8, field string) (uint32, int, error) {
	if wt != wireI32 {
		return 0, 0, wrongType(wt, field)
	}
	if pos+4 > len(b) {
		return 0, 0, io.ErrUnexpectedEOF
	}
	return binary.LittleEndian.Uint32(b[pos:]), pos + 4, nil
}

// skip passes over a field tally does not know, groups included, as pdata's
// ConsumeUnknown does.
func skip(b []byte, pos int, wt int8) (int, error) {
	depth := 0
	var err error
	for pos < len(b) {
		switch wt {
		case wireVarint:
			_, pos, err = consumeVarint(b, pos)
			return pos, err
		case wireI64:
			if pos+8 > len(b) {
				return 0, io.ErrUnexpectedEOF
			}
			return pos + 8, nil
		case wireLen:
			_, pos, err = consumeLen(b, pos)
			return pos, err
		case wireStartGroup:
			depth++
		case wireEndGroup:
			if depth == 0 {
				return 0, errEndOfGroup
			}
			depth--
		case wireI32:
			if pos+4 > len(b) {
				return 0, io.ErrUnexpectedEOF
			}
			return pos + 4, nil
		default:
			return 0, fmt.Errorf("proto: illegal wireType %d", wt)
		}
		if depth == 0 {
			return pos, nil
		}
		if _, wt, pos, err = consumeTag(b, pos); err != nil {
			return 0, err
		}
	}
	return 0, io.ErrUnexpectedEOF
}
