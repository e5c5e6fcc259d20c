package wire

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/protobuf/encoding/protowire"
)

// richTraces has every value type, nesting, repeated keys, events, links,
// statuses and empty lists, over two resources and three scopes.
func richTraces() ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "agent")
	rs.Resource().Attributes().PutInt("pid", -7)
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("opentelemetry.instrumentation.anthropic")
	ss.Scope().SetVersion("0.40.2")
	ss.Scope().Attributes().PutStr("ignored", "yes")
	sp := ss.Spans().AppendEmpty()
	sp.SetTraceID(pcommon.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	sp.SetSpanID(pcommon.SpanID{1, 1, 1, 1, 1, 1, 1, 1})
	sp.SetParentSpanID(pcommon.SpanID{2, 2, 2, 2, 2, 2, 2, 2})
	sp.SetName("chat claude")
	sp.SetKind(ptrace.SpanKindClient)
	sp.SetStartTimestamp(1_700_000_000_000_000_000)
	sp.SetEndTimestamp(1_700_000_001_500_000_000)
	sp.Status().SetCode(ptrace.StatusCodeError)
	sp.Status().SetMessage("overloaded")
	sp.TraceState().FromRaw("k=v")
	a := sp.Attributes()
	a.PutStr("gen_ai.request.model", "claude-sonnet-4")
	a.PutInt("gen_ai.usage.input_tokens", 1200)
	a.PutDouble("temperature", 0.25)
	a.PutDouble("nan", math.NaN())
	a.PutBool("stream", true)
	a.PutEmptyBytes("blob").FromRaw([]byte{0, 1, 2, 0xff})
	a.PutEmptyBytes("empty_blob")
	a.PutEmpty("nothing")
	fr := a.PutEmptySlice("gen_ai.response.finish_reasons")
	fr.AppendEmpty().SetStr("stop")
	fr.AppendEmpty().SetInt(3)
	fr.AppendEmpty().SetEmptyMap().PutStr("deep", "x")
	m := a.PutEmptyMap("meta")
	m.PutStr("a", "1")
	m.PutEmptyMap("b").PutEmptySlice("c")
	a.PutStr("invalid_utf8", "\xff\xfe")
	ev := sp.Events().AppendEmpty()
	ev.SetName("gen_ai.choice")
	ev.SetTimestamp(1_700_000_001_000_000_000)
	ev.Attributes().PutStr("message", "hi")
	sp.Events().AppendEmpty().SetName("bare")
	l := sp.Links().AppendEmpty()
	l.SetTraceID(pcommon.TraceID{9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9})
	l.SetSpanID(pcommon.SpanID{8, 8, 8, 8, 8, 8, 8, 8})
	l.Attributes().PutStr("dropped", "by tally")
	l.SetFlags(1)
	sp2 := ss.Spans().AppendEmpty()
	sp2.SetName("no ids, no times")
	rs.ScopeSpans().AppendEmpty() // a scope with no spans
	rs2 := td.ResourceSpans().AppendEmpty()
	ss2 := rs2.ScopeSpans().AppendEmpty()
	sp3 := ss2.Spans().AppendEmpty()
	sp3.SetKind(ptrace.SpanKind(42))
	sp3.Attributes().PutStr("dup", "first")
	sp3.Attributes().PutStr("other", "x")
	// Duplicate keys survive the wire; pdata's Put would overwrite, so
	// the duplicate is added by the raw byte case below instead.
	return td
}

func marshal(t testing.TB, td ptrace.Traces) []byte {
	t.Helper()
	b, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Hand-built wire bytes for the rules pdata's generated code has and the
// proto library would spell differently.
func field(num protowire.Number, typ protowire.Type, payload []byte) []byte {
	b := protowire.AppendTag(nil, num, typ)
	switch typ {
	case protowire.BytesType:
		return protowire.AppendBytes(b, payload)
	default:
		return append(b, payload...)
	}
}

func msg(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func strKV(k, v string) []byte {
	return msg(field(1, protowire.BytesType, []byte(k)),
		field(2, protowire.BytesType, field(1, protowire.BytesType, []byte(v))))
}

func spanWith(parts ...[]byte) []byte {
	return field(1, protowire.BytesType, field(2, protowire.BytesType, field(2, protowire.BytesType, msg(parts...))))
}

func nested(depth int) []byte {
	v := field(1, protowire.BytesType, []byte("leaf")) // AnyValue{string}
	for range depth {
		// AnyValue{array_value: ArrayValue{values: [v]}}
		v = field(5, protowire.BytesType, field(1, protowire.BytesType, v))
	}
	return field(9, protowire.BytesType, msg(field(1, protowire.BytesType, []byte("k")), field(2, protowire.BytesType, v)))
}

func wireCases(t testing.TB) map[string][]byte {
	huge := protowire.AppendVarint(nil, (1<<32|5)<<3|2) // tag whose field number truncates to 5 (name)
	return map[string][]byte{
		"rich":                        marshal(t, richTraces()),
		"empty":                       {},
		"resource spans with nothing": field(1, protowire.BytesType, nil),
		"repeated resources merge": field(1, protowire.BytesType, msg(
			field(1, protowire.BytesType, field(1, protowire.BytesType, strKV("a", "1"))),
			field(2, protowire.BytesType, field(2, protowire.BytesType, field(5, protowire.BytesType, []byte("s")))),
			field(1, protowire.BytesType, field(1, protowire.BytesType, strKV("b", "2"))))),
		"deprecated scope spans only": field(1, protowire.BytesType,
			field(1000, protowire.BytesType, field(2, protowire.BytesType, field(5, protowire.BytesType, []byte("old"))))),
		"deprecated ignored beside scope spans": field(1, protowire.BytesType, msg(
			field(1000, protowire.BytesType, field(2, protowire.BytesType, field(5, protowire.BytesType, []byte("old")))),
			field(2, protowire.BytesType, field(2, protowire.BytesType, field(5, protowire.BytesType, []byte("new")))))),
		"duplicate keys": spanWith(field(9, protowire.BytesType, strKV("k", "1")), field(9, protowire.BytesType, strKV("k", "2"))),
		"value merges":   spanWith(field(9, protowire.BytesType, msg(strKV("k", "kept"), field(2, protowire.BytesType, nil)))),
		"oneof last wins": spanWith(field(9, protowire.BytesType, msg(field(1, protowire.BytesType, []byte("k")),
			field(2, protowire.BytesType, msg(field(1, protowire.BytesType, []byte("s")), field(3, protowire.VarintType, protowire.AppendVarint(nil, 5))))))),
		"strindex is empty": spanWith(field(9, protowire.BytesType, msg(field(1, protowire.BytesType, []byte("k")),
			field(2, protowire.BytesType, field(8, protowire.VarintType, protowire.AppendVarint(nil, 3)))))),
		"status merges": spanWith(field(15, protowire.BytesType, field(3, protowire.VarintType, []byte{2})),
			field(15, protowire.BytesType, field(2, protowire.BytesType, []byte("m")))),
		"negative kind": spanWith(field(6, protowire.VarintType, protowire.AppendVarint(nil, uint64(math.MaxUint64)))),
		"unknown fields and groups": spanWith(field(99, protowire.VarintType, []byte{1}),
			field(98, protowire.StartGroupType, nil), field(98, protowire.EndGroupType, nil),
			field(97, protowire.Fixed64Type, make([]byte, 8)), field(96, protowire.Fixed32Type, make([]byte, 4)),
			field(5, protowire.BytesType, []byte("named"))),
		// pdata's skip returns after a group's first member, so a group with
		// members is refused; the decoder must refuse it too.
		"group with a member": spanWith(field(98, protowire.StartGroupType, nil), field(1, protowire.Fixed32Type, []byte{1, 2, 3, 4}),
			field(98, protowire.EndGroupType, nil)),
		"empty id resets":             spanWith(field(1, protowire.BytesType, bytes.Repeat([]byte{1}, 16)), field(1, protowire.BytesType, nil)),
		"depth 49 ok":                 spanWith(nested(49)),
		"depth 50 refused":            spanWith(nested(50)),
		"truncated tag":               spanWith(append(huge, protowire.AppendBytes(nil, []byte("truncated"))...)),
		"bad id length":               spanWith(field(2, protowire.BytesType, []byte{1, 2, 3})),
		"wrong wire type":             spanWith(field(7, protowire.VarintType, []byte{1})),
		"wrong type in skipped field": spanWith(field(3, protowire.VarintType, []byte{1})),
		"wrong type in scope attributes": field(1, protowire.BytesType, field(2, protowire.BytesType,
			field(1, protowire.BytesType, field(3, protowire.BytesType, field(1, protowire.VarintType, []byte{1}))))),
		"stray end group": spanWith(field(5, protowire.EndGroupType, nil)),
		"truncated":       marshal(t, richTraces())[:200],
		"field zero":      {0x02, 0x00},
		"varint overflow": append([]byte{0x08}, bytes.Repeat([]byte{0xff}, 11)...),
	}
}

// decodeBoth decodes b with pdata and with a Decoder and says whether they
// agree: both refuse, or both accept with equal Traces.
func decodeBoth(d *Decoder, b []byte) (pdataErr, wireErr error, diff string) {
	req := ptraceotlp.NewExportRequest()
	pdataErr = req.UnmarshalProto(b)
	got, wireErr := d.Decode(b)
	if (pdataErr == nil) != (wireErr == nil) {
		return pdataErr, wireErr, fmt.Sprintf("pdata error %v, wire error %v", pdataErr, wireErr)
	}
	if pdataErr != nil {
		return pdataErr, wireErr, ""
	}
	want := FromPdata(req.Traces())
	if !reflect.DeepEqual(got, want) {
		return nil, nil, fmt.Sprintf("wire decoded\n%+v\npdata decoded\n%+v", got, want)
	}
	return nil, nil, ""
}

func TestDecodeAgreesWithPdata(t *testing.T) {
	// The cases pdata refuses; every other case must decode. Both sides
	// are named so that a table that only ever failed cannot agree
	// vacuously.
	refused := map[string]bool{"depth 50 refused": true, "bad id length": true, "wrong wire type": true,
		"wrong type in skipped field": true, "wrong type in scope attributes": true, "stray end group": true,
		"truncated": true, "field zero": true, "group with a member": true, "varint overflow": true}
	var d Decoder
	for name, b := range wireCases(t) {
		t.Run(name, func(t *testing.T) {
			pErr, _, diff := decodeBoth(&d, b)
			if diff != "" {
				t.Fatal(diff)
			}
			if (pErr != nil) != refused[name] {
				t.Fatalf("pdata error %v, want refused=%v", pErr, refused[name])
			}
		})
	}
}

// TestDecodeValues checks decoded values against the values put in by hand,
// not only against pdata.
func TestDecodeValues(t *testing.T) {
	var d Decoder
	tr, err := d.Decode(marshal(t, richTraces()))
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Resources) != 2 || len(tr.Resources[0].Scopes) != 2 || tr.SpanCount() != 3 {
		t.Fatalf("shape: %d resources, %d spans", len(tr.Resources), tr.SpanCount())
	}
	if got := tr.Resources[0].Attributes; len(got) != 2 || got[0].Key != "service.name" || got[0].Value.Str() != "agent" || got[1].Value.Int() != -7 {
		t.Errorf("resource attributes %+v", got)
	}
	sc := tr.Resources[0].Scopes[0]
	if sc.Name != "opentelemetry.instrumentation.anthropic" || sc.Version != "0.40.2" {
		t.Errorf("scope %q %q", sc.Name, sc.Version)
	}
	sp := sc.Spans[0]
	if sp.TraceID[15] != 16 || sp.SpanID != [8]byte{1, 1, 1, 1, 1, 1, 1, 1} || sp.ParentSpanID[0] != 2 {
		t.Errorf("ids %x %x %x", sp.TraceID, sp.SpanID, sp.ParentSpanID)
	}
	if sp.Name != "chat claude" || sp.Kind != 3 || sp.End-sp.Start != 1_500_000_000 || sp.StatusCode != 2 || sp.StatusMessage != "overloaded" {
		t.Errorf("span %+v", sp)
	}
	byKey := map[string]Value{}
	for _, kv := range sp.Attributes {
		byKey[kv.Key] = kv.Value
	}
	if v := byKey["gen_ai.usage.input_tokens"]; v.Type() != ValueInt || v.Int() != 1200 {
		t.Errorf("input tokens %+v", v)
	}
	if v := byKey["temperature"]; v.Double() != 0.25 {
		t.Errorf("temperature %+v", v)
	}
	if v := byKey["nan"]; !math.IsNaN(v.Double()) {
		t.Errorf("nan %+v", v)
	}
	if !byKey["stream"].Bool() || byKey["blob"].Bytes() != "\x00\x01\x02\xff" || byKey["nothing"].Type() != ValueEmpty {
		t.Errorf("bool/bytes/empty %+v %+v %+v", byKey["stream"], byKey["blob"], byKey["nothing"])
	}
	if v := byKey["empty_blob"]; v.Type() != ValueBytes || v.Bytes() != "" {
		t.Errorf("empty bytes %+v", v)
	}
	fr := byKey["gen_ai.response.finish_reasons"].Slice()
	if len(fr) != 3 || fr[0].Value.Str() != "stop" || fr[1].Value.Int() != 3 || fr[2].Value.Map()[0].Value.Str() != "x" {
		t.Errorf("finish reasons %+v", fr)
	}
	if meta := byKey["meta"].Map(); len(meta) != 2 || meta[1].Value.Map()[0].Value.Type() != ValueSlice {
		t.Errorf("meta %+v", meta)
	}
	if len(sp.Events) != 2 || sp.Events[0].Name != "gen_ai.choice" || sp.Events[0].Attributes[0].Value.Str() != "hi" || sp.Events[1].Attributes != nil {
		t.Errorf("events %+v", sp.Events)
	}
	if len(sp.Links) != 1 || sp.Links[0].SpanID[0] != 8 || sp.Links[0].TraceID[0] != 9 {
		t.Errorf("links %+v", sp.Links)
	}
	if k := tr.Resources[1].Scopes[0].Spans[0].Kind; k != 42 {
		t.Errorf("kind %d", k)
	}
}

// TestDecodeReuse decodes a large request, then a small one, with one
// Decoder: the second must not see the first's rows.
func TestDecodeReuse(t *testing.T) {
	var d Decoder
	big := ptrace.NewTraces()
	ss := big.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
	for i := range 100 {
		sp := ss.Spans().AppendEmpty()
		sp.SetName(fmt.Sprint("span ", i))
		sp.Attributes().PutInt("i", int64(i))
	}
	if tr, err := d.Decode(marshal(t, big)); err != nil || tr.SpanCount() != 100 {
		t.Fatalf("big: %v, %d spans", err, tr.SpanCount())
	}
	small := richTraces()
	tr, err := d.Decode(marshal(t, small))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(tr, FromPdata(small)) {
		t.Errorf("second request differs from pdata's reading:\n%+v", tr)
	}
}

// FuzzDecodeAgainstPdata is the differential test: for any bytes, the
// Decoder and pdata accept and refuse alike and read the same Traces.
func FuzzDecodeAgainstPdata(f *testing.F) {
	for _, b := range wireCases(f) {
		f.Add(b)
	}
	var d Decoder
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, _, diff := decodeBoth(&d, b); diff != "" {
			t.Fatalf("%s\nbody %q", diff, truncate(b))
		}
	})
}

func truncate(b []byte) string {
	s := fmt.Sprintf("%x", b)
	if len(s) > 400 {
		return s[:400] + "…"
	}
	return strings.TrimSpace(s)
}
