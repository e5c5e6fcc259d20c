package wire

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// FromPdata is td as Traces, for the requests pdata decodes (JSON, and
// protobuf that needed repair) and for tests that build traces with pdata.
// Strings are shared with td; bytes values are copied.
func FromPdata(td ptrace.Traces) Traces {
	rss := td.ResourceSpans()
	t := Traces{Resources: make([]ResourceSpans, rss.Len())}
	for i := range t.Resources {
		rs := rss.At(i)
		out := &t.Resources[i]
		out.Attributes = attributes(rs.Resource().Attributes())
		sss := rs.ScopeSpans()
		out.Scopes = make([]ScopeSpans, sss.Len())
		for j := range out.Scopes {
			ss := sss.At(j)
			sc := &out.Scopes[j]
			sc.Name, sc.Version = ss.Scope().Name(), ss.Scope().Version()
			spans := ss.Spans()
			sc.Spans = make([]Span, spans.Len())
			for k := range sc.Spans {
				fromSpan(&sc.Spans[k], spans.At(k))
			}
			sc.Spans = nilIfEmpty(sc.Spans)
		}
		out.Scopes = nilIfEmpty(out.Scopes)
	}
	t.Resources = nilIfEmpty(t.Resources)
	return t
}

func fromSpan(out *Span, sp ptrace.Span) {
	out.TraceID, out.SpanID, out.ParentSpanID = [16]byte(sp.TraceID()), [8]byte(sp.SpanID()), [8]byte(sp.ParentSpanID())
	out.Name = sp.Name()
	out.Kind = int32(sp.Kind())
	out.Start, out.End = uint64(sp.StartTimestamp()), uint64(sp.EndTimestamp())
	out.StatusCode, out.StatusMessage = int32(sp.Status().Code()), sp.Status().Message()
	out.Attributes = attributes(sp.Attributes())
	if evs := sp.Events(); evs.Len() > 0 {
		out.Events = make([]Event, evs.Len())
		for i := range out.Events {
			ev := evs.At(i)
			out.Events[i] = Event{Time: uint64(ev.Timestamp()), Name: ev.Name(), Attributes: attributes(ev.Attributes())}
		}
	}
	if ls := sp.Links(); ls.Len() > 0 {
		out.Links = make([]Link, ls.Len())
		for i := range out.Links {
			out.Links[i] = Link{TraceID: [16]byte(ls.At(i).TraceID()), SpanID: [8]byte(ls.At(i).SpanID())}
		}
	}
}

// attributes is m as a list, nil when empty.
func attributes(m pcommon.Map) []KeyValue {
	if m.Len() == 0 {
		return nil
	}
	out := make([]KeyValue, 0, m.Len())
	for k, v := range m.All() {
		out = append(out, KeyValue{Key: k, Value: FromValue(v)})
	}
	return out
}

// FromValue is v as a Value.
func FromValue(v pcommon.Value) Value {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return StrValue(v.Str())
	case pcommon.ValueTypeBool:
		return BoolValue(v.Bool())
	case pcommon.ValueTypeInt:
		return IntValue(v.Int())
	case pcommon.ValueTypeDouble:
		return DoubleValue(v.Double())
	case pcommon.ValueTypeBytes:
		return BytesValue(string(v.Bytes().AsRaw()))
	case pcommon.ValueTypeMap:
		return MapValue(attributes(v.Map()))
	case pcommon.ValueTypeSlice:
		s := v.Slice()
		elems := make([]KeyValue, s.Len())
		for i := range elems {
			elems[i].Value = FromValue(s.At(i))
		}
		return SliceValue(elems)
	}
	return Value{}
}
