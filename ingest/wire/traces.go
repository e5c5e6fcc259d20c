// Package wire holds Traces, tally's flat view of an OTLP trace export
// request: only the fields the normalizer reads, in slices rather than
// pdata's graph of objects. A Decoder fills it straight from the protobuf
// wire format, its strings pointing into the request body (no copies, no
// per-attribute objects); FromPdata fills it from pdata for the paths where
// pdata serves (JSON requests, requests that need repair, tests). The two
// agree field for field: the differential fuzz test holds them to it.
package wire

import "math"

// ValueType is the type of a Value, as OTLP's AnyValue oneof.
type ValueType uint8

// The value types; their meaning is pcommon.ValueType's.
const (
	ValueEmpty ValueType = iota
	ValueStr
	ValueBool
	ValueInt
	ValueDouble
	ValueBytes
	ValueMap
	ValueSlice
)

// Value is one attribute value. The zero Value is empty.
type Value struct {
	typ ValueType
	str string     // ValueStr; ValueBytes (the raw bytes)
	num uint64     // ValueInt, ValueDouble (bits), ValueBool (0 or 1)
	kvs []KeyValue // ValueMap; ValueSlice (elements in Value, Key "")
}

// KeyValue is one attribute: a key and its value. Keys may repeat within a
// list, as on the wire; readers take the first.
type KeyValue struct {
	Key   string
	Value Value
}

// StrValue is a string value.
func StrValue(s string) Value { return Value{typ: ValueStr, str: s} }

// IntValue is an integer value.
func IntValue(i int64) Value { return Value{typ: ValueInt, num: uint64(i)} }

// DoubleValue is a floating-point value.
func DoubleValue(f float64) Value { return Value{typ: ValueDouble, num: math.Float64bits(f)} }

// BoolValue is a boolean value.
func BoolValue(b bool) Value {
	v := Value{typ: ValueBool}
	if b {
		v.num = 1
	}
	return v
}

// BytesValue is a bytes value; b is held as a string (not copied again).
func BytesValue(b string) Value { return Value{typ: ValueBytes, str: b} }

// MapValue is a map value over kvs (not copied).
func MapValue(kvs []KeyValue) Value { return Value{typ: ValueMap, kvs: nilIfEmpty(kvs)} }

// SliceValue is an array value whose elements are the Values of elems (their
// keys are ignored and should be "").
func SliceValue(elems []KeyValue) Value { return Value{typ: ValueSlice, kvs: nilIfEmpty(elems)} }

// Type is v's type.
func (v Value) Type() ValueType { return v.typ }

// Str is a string value's text, "" for other types.
func (v Value) Str() string {
	if v.typ != ValueStr {
		return ""
	}
	return v.str
}

// Int is an integer value, 0 for other types.
func (v Value) Int() int64 {
	if v.typ != ValueInt {
		return 0
	}
	return int64(v.num)
}

// Double is a floating-point value, 0 for other types.
func (v Value) Double() float64 {
	if v.typ != ValueDouble {
		return 0
	}
	return math.Float64frombits(v.num)
}

// Bool is a boolean value, false for other types.
func (v Value) Bool() bool { return v.typ == ValueBool && v.num != 0 }

// Bytes is a bytes value's raw bytes as a string, "" for other types.
func (v Value) Bytes() string {
	if v.typ != ValueBytes {
		return ""
	}
	return v.str
}

// Map is a map value's entries in wire order, nil for other types.
func (v Value) Map() []KeyValue {
	if v.typ != ValueMap {
		return nil
	}
	return v.kvs
}

// Slice is an array value's elements, each in the Value of an entry whose
// Key is "", nil for other types.
func (v Value) Slice() []KeyValue {
	if v.typ != ValueSlice {
		return nil
	}
	return v.kvs
}

// Traces is one export request: its resources in order.
type Traces struct {
	Resources []ResourceSpans
}

// SpanCount is the number of spans in t.
func (t Traces) SpanCount() int {
	n := 0
	for i := range t.Resources {
		for j := range t.Resources[i].Scopes {
			n += len(t.Resources[i].Scopes[j].Spans)
		}
	}
	return n
}

// ResourceSpans is one resource's attributes and its spans by scope.
type ResourceSpans struct {
	Attributes []KeyValue
	Scopes     []ScopeSpans
}

// ScopeSpans is one instrumentation scope and its spans.
type ScopeSpans struct {
	Name, Version string
	Spans         []Span
}

// Span is one span. Kind and StatusCode hold OTLP's enum numbers as sent
// (ptrace.SpanKind and ptrace.StatusCode give their meaning).
type Span struct {
	TraceID       [16]byte
	SpanID        [8]byte
	ParentSpanID  [8]byte
	Name          string
	Kind          int32
	Start, End    uint64 // Unix nanoseconds
	StatusCode    int32
	StatusMessage string
	Attributes    []KeyValue
	Events        []Event
	Links         []Link
}

// Event is one span event.
type Event struct {
	Time       uint64 // Unix nanoseconds
	Name       string
	Attributes []KeyValue
}

// Link is one span link: the span it points to.
type Link struct {
	TraceID [16]byte
	SpanID  [8]byte
}

// nilIfEmpty keeps empty lists nil, so both builders agree.
func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}
