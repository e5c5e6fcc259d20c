package rowcodec

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/tallyhq/tally/ingest"
	"github.com/tallyhq/tally/schema"
)

// fill sets every field of the struct v points to a distinct non-zero value
// derived from *n. A field of a kind it does not know fails the test, so a
// new field type cannot slip past the round trip.
func fill(t *testing.T, v reflect.Value, n *int) {
	t.Helper()
	v = v.Elem()
	typ := v.Type()
	for i := range v.NumField() {
		f, name := v.Field(i), typ.Field(i).Name
		*n++
		k := *n
		switch {
		case f.Type() == reflect.TypeFor[time.Time]():
			f.Set(reflect.ValueOf(time.Unix(1_700_000_000+int64(k), int64(k)).UTC()))
		case f.Kind() == reflect.String:
			f.SetString(fmt.Sprintf("%s-%d-é", name, k))
		case f.Kind() == reflect.Uint8, f.Kind() == reflect.Uint32, f.Kind() == reflect.Uint64:
			f.SetUint(uint64(k))
		case f.Kind() == reflect.Float64:
			f.SetFloat(float64(k) + 0.25)
		case f.Type() == reflect.TypeFor[[]string]():
			f.Set(reflect.ValueOf([]string{fmt.Sprintf("%s-%d-a", name, k), "", fmt.Sprintf("%s-%d-b", name, k)}))
		case f.Type() == reflect.TypeFor[[]uint64]():
			f.Set(reflect.ValueOf([]uint64{uint64(k), 1 << 63, uint64(k) + 1}))
		default:
			t.Fatalf("field %s.%s has type %s: teach fill (and rowcodec) about it", typ.Name(), name, f.Type())
		}
		if f.IsZero() {
			t.Fatalf("field %s.%s left zero", typ.Name(), name)
		}
	}
}

func filledBatch(t *testing.T, spans, contents int) ingest.Batch {
	t.Helper()
	n := 0
	b := ingest.Batch{Spans: make([]schema.Span, spans), Contents: make([]schema.Content, contents)}
	for i := range b.Spans {
		fill(t, reflect.ValueOf(&b.Spans[i]), &n)
	}
	for i := range b.Contents {
		fill(t, reflect.ValueOf(&b.Contents[i]), &n)
	}
	return b
}

func TestRoundTripEveryField(t *testing.T) {
	want := filledBatch(t, 3, 2)
	enc := Encode(nil, want)
	got, err := Decode(enc)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		for i := range want.Spans {
			gv, wv := reflect.ValueOf(got.Spans[i]), reflect.ValueOf(want.Spans[i])
			for j := range wv.NumField() {
				if !reflect.DeepEqual(gv.Field(j).Interface(), wv.Field(j).Interface()) {
					t.Errorf("span %d field %s: got %v, want %v", i, wv.Type().Field(j).Name, gv.Field(j), wv.Field(j))
				}
			}
		}
		t.Fatalf("round trip differs:\n got %+v\nwant %+v", got.Contents, want.Contents)
	}
	// Encode appends: a prefix in dst is kept.
	if withPrefix := Encode([]byte("xy"), want); !bytes.Equal(withPrefix[2:], enc) || string(withPrefix[:2]) != "xy" {
		t.Fatal("Encode did not append to dst")
	}
}

// TestReadsVersion1 decodes a record of the durable log as the encoder of
// format version 1 wrote it (testdata/version1.bin, written by that
// encoder, commit b1cc8c1, from version1Batch): every field comes back,
// the two the version lacked are zero. It also holds the version 1 layout
// encode writes for the tests.
func TestReadsVersion1(t *testing.T) {
	old, err := os.ReadFile("testdata/version1.bin")
	if err != nil {
		t.Fatal(err)
	}
	want := version1Batch()
	got, err := Decode(old)
	if err != nil {
		t.Fatalf("Decode of version 1: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("version 1 decoded as\n%+v\nwant\n%+v", got, want)
	}
	if n, err := SpanCount(old); err != nil || n != 1 {
		t.Fatalf("SpanCount of version 1 = %d, %v; want 1", n, err)
	}
	if enc := encode(nil, want, version1); !bytes.Equal(enc, old) {
		t.Fatal("encode(version1) differs from what the version 1 encoder wrote")
	}
	if _, err := Decode(append([]byte{Version + 1}, old[1:]...)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("version %d decoded: %v", Version+1, err)
	}
}

// version1Batch is the batch testdata/version1.bin holds, as the encoder of
// format version 1 (the build before spans had UsageRecord and CostConfidence) wrote it: every field of that version set.
func version1Batch() ingest.Batch {
	at := time.Date(2026, 12, 4, 10, 30, 0, 123456789, time.UTC)
	return ingest.Batch{Spans: []schema.Span{{
		Project: "p", TraceID: strings.Repeat("a", 32), SpanID: strings.Repeat("b", 16), ParentSpanID: strings.Repeat("c", 16),
		Start: at.Truncate(time.Second), StartNs: 1, EndNs: 2, DurationNs: 1,
		Name: "chat gpt-4o", Kind: "client", Status: "ok", StatusMessage: "fine", Service: "svc", ScopeName: "scope", ScopeVersion: "1.0",
		SpanType: schema.TypeInference, Operation: "chat", Provider: "openai", RequestModel: "gpt-4o", ResponseModel: "gpt-4o-2024-08-06", Model: "gpt-4o-2024-08-06",
		AgentName: "agent", AgentID: "a1", ConversationID: "conv", UserID: "user", TaskName: "task",
		ToolName: "tool", ToolCallID: "call", ToolType: "function", Attempt: 2, StepID: "step", ArgsHash: "hash",
		FinishReasons: []string{"stop", "length"}, ErrorType: "timeout", TTFCMs: 12.5,
		InputTokens: 100, CacheReadTokens: 40, CacheWriteTokens: 10, OutputTokens: 20, ReasoningTokens: 5,
		UsageMode: schema.UsageInclusive, UsageUnreconciled: 1,
		CostInput: 0.1, CostCacheRead: 0.2, CostCacheWrite: 0.3, CostOutput: 0.4, CostTotal: 1.0,
		CostSource: schema.CostCatalog, PriceEntry: "openai/gpt-4o", PriceVersion: "2024-08-06",
		AttrKeys: []string{"k1", "k2"}, AttrValues: []string{"v1", "é"}, ResourceKeys: []string{"service.name"}, ResourceValues: []string{"svc"},
		// Not in version 1: its rows' column keys are not known.
		ColumnKeys: []string{schema.ColumnKeysUnknown},
		EventNames: []string{"e"}, EventTimeNs: []uint64{3}, EventAttrs: []string{`{"x":1}`}, LinksJSON: `[]`,
		IngestedAt: at, Version: 42,
	}}, Contents: []schema.Content{{Project: "p", TraceID: strings.Repeat("a", 32), SpanID: strings.Repeat("b", 16),
		Start: at.Truncate(time.Second), Kind: schema.ContentToolArguments, SourceKey: "gen_ai.tool.call.arguments", Value: `{"q":1}`, Truncated: 1, Version: 42}}}
}

func TestSpecialValuesRoundTrip(t *testing.T) {
	want := ingest.Batch{Spans: []schema.Span{{
		Start:       time.Unix(-1, 999_999_999).UTC(), // before 1970
		IngestedAt:  time.Date(2262, 4, 11, 23, 47, 16, 854775807, time.UTC),
		TTFCMs:      -0.5,
		CostTotal:   1e-12,
		StartNs:     1<<64 - 1,
		Name:        string([]byte{0, 0xff, 0xfe}), // not UTF-8: bytes kept as they are
		EventTimeNs: []uint64{0},
	}}}
	got, err := Decode(Encode(nil, want))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got.Spans[0], want.Spans[0])
	}
}

func TestMinimumRowSizes(t *testing.T) {
	// version + size + span count + one zero span + content count =
	// 1+8+1+193+1.
	if n := len(Encode(nil, ingest.Batch{Spans: make([]schema.Span, 1)})); n != 204 {
		t.Fatalf("batch of one zero span encodes to %d bytes, want 204", n)
	}
	// Version 3 had no size.
	if n := len(encode(nil, ingest.Batch{Spans: make([]schema.Span, 1)}, version3)); n != 196 {
		t.Fatalf("version 3: batch of one zero span encodes to %d bytes, want 196", n)
	}
	// Version 2 had no column_keys.
	if n := len(encode(nil, ingest.Batch{Spans: make([]schema.Span, 1)}, version2)); n != 195 {
		t.Fatalf("version 2: batch of one zero span encodes to %d bytes, want 195", n)
	}
	// Version 1 had no usage_record byte and no cost_confidence string.
	if n := len(encode(nil, ingest.Batch{Spans: make([]schema.Span, 1)}, version1)); n != 193 {
		t.Fatalf("version 1: batch of one zero span encodes to %d bytes, want 193", n)
	}
	// version + size + span count + content count + one zero content =
	// 1+8+1+1+27.
	if n := len(Encode(nil, ingest.Batch{Contents: make([]schema.Content, 1)})); n != 38 {
		t.Fatalf("batch of one zero content encodes to %d bytes, want 38", n)
	}
}

func TestContentLayout(t *testing.T) {
	b := ingest.Batch{Contents: []schema.Content{{
		Project: "p", TraceID: "t", SpanID: "s",
		Start: time.Unix(3, 4).UTC(), Kind: "k", SourceKey: "", Value: "vv", Truncated: 1, Version: 258,
	}, {
		Project: "p", TraceID: "t", SpanID: "s2",
		Start: time.Unix(3, 4).UTC(), Kind: "k", SourceKey: "", Value: "vv", Truncated: 0, Version: 258,
	}}}
	want := []byte{
		4,                       // version
		70, 0, 0, 0, 0, 0, 0, 0, // size written out: 3 + 33 + 34, as version 3 writes it (below, and a second content of 34)
		0,                      // no spans
		2,                      // two contents
		5, 'p', 5, 't', 5, 's', // project, trace_id, span_id: literals, tag = 4 + length
		3, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, // start: seconds 3 (int64), nanoseconds 4 (uint32)
		5, 'k', 0, 6, 'v', 'v', // kind, source_key "" (tag 0), value
		1,                      // truncated
		2, 1, 0, 0, 0, 0, 0, 0, // version 258 = 0x0102, little-endian
		1, 1, 6, 's', '2', // project, trace_id: the field's first earlier literal; span_id a literal
		3, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0,
		1, 0, 1, // kind and value as before, source_key empty
		0,
		2, 1, 0, 0, 0, 0, 0, 0,
	}
	if got := Encode(nil, b); !bytes.Equal(got, want) {
		t.Fatalf("encoding\n got %v\nwant %v", got, want)
	}
	// Version 3 wrote every string as its length and bytes.
	want3 := []byte{
		3, 0, 1,
		1, 'p', 1, 't', 1, 's',
		3, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0,
		1, 'k', 0, 2, 'v', 'v',
		1,
		2, 1, 0, 0, 0, 0, 0, 0,
	}
	if got := encode(nil, ingest.Batch{Contents: b.Contents[:1]}, version3); !bytes.Equal(got, want3) {
		t.Fatalf("version 3 encoding\n got %v\nwant %v", got, want3)
	}
}

// TestReferencesLayout: a field refers to its own last four literals, the
// oldest giving way to a new one; a slice's element to the element at its
// index in the field's last four slices.
func TestReferencesLayout(t *testing.T) {
	names := []string{"a", "b", "c", "d", "e", "a", "e"}
	keys := [][]string{{"k1", "k2"}, {"k1"}, {"k2", "k2", "k3"}}
	var b ingest.Batch
	for i, n := range names {
		s := schema.Span{Name: n}
		if i < len(keys) {
			s.AttrKeys = keys[i]
		}
		b.Spans = append(b.Spans, s)
	}
	enc := Encode(nil, b)
	// The name is the span's fifth string: it follows the project, trace,
	// span and parent ids (all empty, tag 0) and the start and three
	// numbers (36 bytes). Its tags, span by span: "a" to "d" literals
	// (5 = 4 + length 1); "e" a literal too, in place of "a"; then "a"
	// again a literal, in place of "b"; "e" the ring's first entry (tag 1).
	nameTags := []byte{5, 5, 5, 5, 5, 5, 1}
	starts := spanStarts(t, enc, len(b.Spans))
	for i, want := range nameTags {
		if got := enc[starts[i]+4+36]; got != want {
			t.Errorf("span %d: name tag %d, want %d", i, got, want)
		}
	}
	got, err := Decode(enc)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, b) {
		t.Fatalf("round trip: got %+v\nwant %+v", got.Spans, b.Spans)
	}
	// The keys: {k1 k2} literals; {k1} refers to the first slice's first
	// element; {k2 k2 k3}: k2 at index 0 is a literal (neither earlier slice
	// has k2 there), k2 at index 1 the first slice's, k3 a literal.
	keys2 := []byte{1, 1} // count, ref 1
	keys3 := []byte{3, 6, 'k', '2', 1, 6, 'k', '3'}
	if !bytes.Contains(enc[starts[1]:starts[2]], keys2) || !bytes.Contains(enc[starts[2]:starts[3]], keys3) {
		t.Fatalf("keys of spans 2 and 3 not encoded as %v and %v: %v", keys2, keys3, enc[starts[1]:starts[3]])
	}
}

// spanStarts is where each of the first n spans of enc starts, found by
// decoding them in order (references reach back to the spans before).
func spanStarts(t *testing.T, enc []byte, n int) []int {
	t.Helper()
	d := decoder{buf: enc, str: string(enc), pos: 1, version: Version, refer: true}
	d.uint64("size")
	d.uvarint("spans")
	var starts []int
	for range n {
		starts = append(starts, d.pos)
		d.row(0)
		var s schema.Span
		d.span(&s)
	}
	if d.err != nil {
		t.Fatalf("span layout: %v", d.err)
	}
	return starts
}

// TestReferencesRoundTrip: batches whose fields draw from small alphabets,
// so that references of every distance, wrapped rings and slices of
// different lengths all occur, decode to what was encoded.
func TestReferencesRoundTrip(t *testing.T) {
	for _, alphabet := range []int{1, 2, 4, 5, 7} {
		t.Run(fmt.Sprint(alphabet), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(alphabet), 7))
			pick := func() string {
				if k := rng.IntN(alphabet + 1); k < alphabet {
					return fmt.Sprint("v", k)
				}
				return ""
			}
			picks := func() []string {
				n := rng.IntN(4)
				if n == 0 {
					return nil
				}
				ss := make([]string, n)
				for i := range ss {
					ss[i] = pick()
				}
				return ss
			}
			var want ingest.Batch
			for range 200 {
				want.Spans = append(want.Spans, schema.Span{
					Project: pick(), TraceID: pick(), Name: pick(), Model: pick(), LinksJSON: pick(),
					AttrKeys: picks(), AttrValues: picks(), ResourceKeys: picks(), FinishReasons: picks(),
					EventAttrs: picks(),
				})
				want.Contents = append(want.Contents, schema.Content{Project: pick(), SpanID: pick(), Value: pick()})
			}
			got, err := Decode(Encode(nil, want))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatal("round trip differs")
			}
		})
	}
}

// TestRepeatedStringsShareBytes: a string every span of a record repeats
// is written once and decodes to one copy, which the spans share.
func TestRepeatedStringsShareBytes(t *testing.T) {
	want := sampleBatch(64)
	enc := Encode(nil, want)
	if n := bytes.Count(enc, []byte("opentelemetry.instrumentation.openai")); n != 1 {
		t.Fatalf("the scope name is written %d times in the record, want once", n)
	}
	got, err := Decode(enc)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatal("round trip differs")
	}
	first := unsafe.StringData(got.Spans[0].ScopeName)
	for i, s := range got.Spans {
		if unsafe.StringData(s.ScopeName) != first || unsafe.StringData(s.ResourceKeys[3]) != unsafe.StringData(got.Spans[0].ResourceKeys[3]) {
			t.Fatalf("span %d holds a copy of its own of a repeated string", i)
		}
	}
	if v3 := encode(nil, want, version3); len(enc)*2 > len(v3) {
		t.Errorf("version 4 record %d bytes, version 3 %d: want at most half", len(enc), len(v3))
	}
}

func TestEmptyBatch(t *testing.T) {
	enc := Encode(nil, ingest.Batch{Spans: []schema.Span{}})
	if want := []byte{4, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0}; !bytes.Equal(enc, want) {
		t.Fatalf("empty batch encodes to %v, want %v", enc, want)
	}
	got, err := Decode(enc)
	if err != nil || got.Spans != nil || got.Contents != nil {
		t.Fatalf("Decode: %+v, %v", got, err)
	}
}

func TestDecodeRejectsBadInput(t *testing.T) {
	valid := Encode(nil, filledBatch(t, 2, 1))
	// Version 4's references to what is not there: the second of two
	// contents whose project refers to ring entry 2 (only entry 1, "p", was
	// written), and a span whose second attribute key refers to the element
	// at index 1 of the previous span's keys, which has one.
	badRef := Encode(nil, ingest.Batch{Contents: []schema.Content{{Project: "p"}, {Project: "p"}}})
	// version, size (8), spans, contents; the first content: 5 'p', empty
	// trace and span ids, start (12), kind, source key, value, truncated,
	// version (8).
	second := 11 + 2 + 2 + 12 + 4 + 8
	if badRef[second] != 1 {
		t.Fatalf("second content's project tag %d, want 1 (the layout changed)", badRef[second])
	}
	badRef[second] = 2
	badElem := Encode(nil, ingest.Batch{Spans: []schema.Span{{AttrKeys: []string{"k"}}, {AttrKeys: []string{"k", "x"}}}})
	badElem = bytes.Replace(badElem, []byte{2, 1, 5, 'x'}, []byte{2, 1, 1}, 1)
	tests := []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"unknown version", append([]byte{5}, valid[1:]...)},
		{"reference before any literal", slices.Concat([]byte{4}, make([]byte, 8), []byte{0, 1, 1})}, // a content whose project refers to an earlier one
		{"reference past the field's literals", badRef},
		{"element reference past the earlier slice", badElem},
		{"trailing byte", append(bytes.Clone(valid), 0)},
		{"span count too large for input", []byte{1, 0x80, 0x80, 0x80, 0x80, 0x10, 0}}, // 1<<32 spans in 1 byte
		{"overlong uvarint", []byte{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
		{"string longer than input", append([]byte{1, 0, 1, 0x7f}, "short"...)},
		{"literal longer than input", slices.Concat([]byte{4}, make([]byte, 8), []byte{0, 1, 0x7f}, []byte("short"))},
		{"nanoseconds out of range", slices.Concat(
			[]byte{1, 0, 1},                // version, no spans, one content
			[]byte{0, 0, 0},                // empty project, trace_id, span_id
			make([]byte, 8),                // start seconds 0
			[]byte{0x00, 0xca, 0x9a, 0x3b}, // start nanoseconds 1e9 = 0x3b9aca00
			[]byte{0, 0, 0, 0},             // kind, source_key, value, truncated
			make([]byte, 8))},              // version
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Decode(tt.in); !errors.Is(err, ErrMalformed) {
				t.Fatalf("Decode: %v, want ErrMalformed", err)
			}
		})
	}
	// Every proper prefix of a valid encoding is truncated input.
	for n := range len(valid) {
		if _, err := Decode(valid[:n]); !errors.Is(err, ErrMalformed) {
			t.Fatalf("Decode of %d-byte prefix (of %d): %v, want ErrMalformed", n, len(valid), err)
		}
	}
}

// AppendDecode of three records into one batch gives exactly their
// concatenation, and a damaged record leaves what was decoded before it.
func TestAppendDecodeCoalesces(t *testing.T) {
	all := filledBatch(t, 5, 4)
	parts := []ingest.Batch{
		{Spans: all.Spans[:2], Contents: all.Contents[:1]},
		{Spans: all.Spans[2:3]}, // no content
		{Spans: all.Spans[3:], Contents: all.Contents[1:]},
	}
	var got ingest.Batch
	for i, p := range parts {
		enc := Encode(nil, p)
		n, err := SpanCount(enc)
		if err != nil || n != len(p.Spans) {
			t.Fatalf("SpanCount of part %d = %d, %v; want %d", i, n, err, len(p.Spans))
		}
		if got, err = AppendDecode(got, enc); err != nil {
			t.Fatalf("AppendDecode part %d: %v", i, err)
		}
	}
	if !reflect.DeepEqual(got, all) {
		t.Fatalf("coalesced batch differs from the whole:\n got %d spans %d contents\nwant %d spans %d contents",
			len(got.Spans), len(got.Contents), len(all.Spans), len(all.Contents))
	}
	bad := Encode(nil, filledBatch(t, 2, 1))
	after, err := AppendDecode(got, bad[:len(bad)-1])
	if !errors.Is(err, ErrMalformed) {
		t.Fatalf("AppendDecode of a truncated record: %v, want ErrMalformed", err)
	}
	if !reflect.DeepEqual(after, all) {
		t.Fatalf("a failed AppendDecode changed the batch: %d spans %d contents, want 5 and 4", len(after.Spans), len(after.Contents))
	}
	if _, err := SpanCount([]byte{2, 1}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("SpanCount of an unknown version: %v, want ErrMalformed", err)
	}
}

func FuzzDecode(f *testing.F) {
	n := 0
	b := ingest.Batch{Spans: make([]schema.Span, 2), Contents: make([]schema.Content, 1)}
	for i := range b.Spans {
		fillNoTest(reflect.ValueOf(&b.Spans[i]), &n)
	}
	fillNoTest(reflect.ValueOf(&b.Contents[0]), &n)
	f.Add(Encode(nil, b))
	f.Add(Encode(nil, ingest.Batch{}))
	f.Add(Encode(nil, sampleBatch(3)))
	f.Add([]byte{1, 0x80, 0x80, 0x80, 0x80, 0x10, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := Decode(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error does not match ErrMalformed: %v", err)
			}
			return
		}
		// What decodes re-encodes to something that decodes to the same
		// encoding again (the input may use overlong varints).
		e1 := Encode(nil, got)
		again, err := Decode(e1)
		if err != nil {
			t.Fatalf("re-encoding does not decode: %v", err)
		}
		if e2 := Encode(nil, again); !bytes.Equal(e1, e2) {
			t.Fatal("encoding is not stable across a round trip")
		}
	})
}

// fillNoTest is fill for the fuzz seed, where every field kind is known.
func fillNoTest(v reflect.Value, n *int) {
	v = v.Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		*n++
		switch {
		case f.Type() == reflect.TypeFor[time.Time]():
			f.Set(reflect.ValueOf(time.Unix(int64(*n), 0).UTC()))
		case f.Kind() == reflect.String:
			f.SetString(fmt.Sprint("s", *n))
		case f.Kind() == reflect.Uint8, f.Kind() == reflect.Uint32, f.Kind() == reflect.Uint64:
			f.SetUint(uint64(*n))
		case f.Kind() == reflect.Float64:
			f.SetFloat(float64(*n))
		case f.Type() == reflect.TypeFor[[]string]():
			f.Set(reflect.ValueOf([]string{fmt.Sprint("e", *n)}))
		case f.Type() == reflect.TypeFor[[]uint64]():
			f.Set(reflect.ValueOf([]uint64{uint64(*n)}))
		}
	}
}

// sampleBatch is a batch shaped like real GenAI traffic: one trace per 8
// spans, a dozen attributes, two events, usage and cost on inference spans,
// and tool arguments/results as content.
func sampleBatch(spans int) ingest.Batch {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var b ingest.Batch
	for i := range spans {
		trace := fmt.Sprintf("%032x", i/8+1)
		span := fmt.Sprintf("%016x", i+1)
		ns := uint64(start.UnixNano()) + uint64(i)*1_000_000
		s := schema.Span{
			Project: "default", TraceID: trace, SpanID: span, ParentSpanID: fmt.Sprintf("%016x", i/8*8+1),
			Start: start, StartNs: ns, EndNs: ns + 850_000_000, DurationNs: 850_000_000,
			Name: "chat gpt-4o", Kind: "client", Status: "ok", Service: "travel-agent",
			ScopeName: "opentelemetry.instrumentation.openai", ScopeVersion: "0.48.0",
			SpanType: schema.TypeInference, Operation: "chat", Provider: "openai",
			RequestModel: "gpt-4o", ResponseModel: "gpt-4o-2024-08-06", Model: "gpt-4o-2024-08-06",
			AgentName: "planner", AgentID: "agent-7", ConversationID: "conv-" + trace[:8], UserID: "user-42",
			TaskName: "plan_trip", FinishReasons: []string{"stop"},
			InputTokens: 1200, CacheReadTokens: 1024, OutputTokens: 310, ReasoningTokens: 0,
			UsageMode: schema.UsageInclusive, CostInput: 0.00044, CostCacheRead: 0.00128, CostOutput: 0.0031,
			CostTotal: 0.00482, CostSource: schema.CostCatalog, PriceEntry: "openai/gpt-4o", PriceVersion: "2026-02-01",
			AttrKeys: []string{"gen_ai.request.temperature", "gen_ai.request.max_tokens", "gen_ai.response.id",
				"http.status_code", "server.address", "llm.is_streaming", "gen_ai.openai.api_base", "retry.count",
				"session.id", "deployment.id", "gen_ai.request.top_p", "gen_ai.system"},
			AttrValues: []string{"0.2", "1024", "chatcmpl-" + span, "200", "api.openai.com", "false",
				"https://api.openai.com/v1", "0", "sess-" + trace[:6], "dep-3", "1", "openai"},
			ResourceKeys:   []string{"service.name", "service.version", "telemetry.sdk.language", "host.name"},
			ResourceValues: []string{"travel-agent", "1.4.2", "python", "worker-3"},
			EventNames:     []string{"gen_ai.content.prompt", "gen_ai.content.completion"},
			EventTimeNs:    []uint64{ns + 1000, ns + 849_000_000},
			EventAttrs:     []string{`{"n":"1"}`, `{"n":"2"}`},
			IngestedAt:     start.Add(time.Second),
		}
		if i%4 == 3 {
			s.SpanType, s.Operation, s.Name = schema.TypeTool, "execute_tool", "execute_tool search_flights"
			s.ToolName, s.ToolCallID, s.ToolType, s.Attempt = "search_flights", "call_"+span, "function", 1
			s.ArgsHash = fmt.Sprintf("%064x", i)
			b.Contents = append(b.Contents, schema.Content{Project: "default", TraceID: trace, SpanID: span, Start: start,
				Kind: schema.ContentToolArguments, SourceKey: "gen_ai.tool.call.arguments",
				Value: `{"from":"SFO","to":"NRT","date":"2026-04-02","passengers":2}`})
		}
		b.Spans = append(b.Spans, s)
	}
	return b
}

func BenchmarkEncode(b *testing.B) {
	batch := sampleBatch(512)
	buf := Encode(nil, batch)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = Encode(buf[:0], batch)
	}
	b.ReportMetric(float64(512*b.N)/b.Elapsed().Seconds(), "spans/s")
	b.ReportMetric(float64(len(buf)), "bytes/batch")
}

func BenchmarkDecode(b *testing.B) {
	buf := Encode(nil, sampleBatch(512))
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(buf); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(512*b.N)/b.Elapsed().Seconds(), "spans/s")
}

// TestReadsVersion2: a record of format version 2 (before column keys)
// decodes whole, its spans' column keys as not recorded, like the spans
// table's older rows.
func TestReadsVersion2(t *testing.T) {
	want := filledBatch(t, 2, 1)
	got, err := Decode(encode(nil, want, version2))
	if err != nil {
		t.Fatal(err)
	}
	for i := range want.Spans {
		want.Spans[i].ColumnKeys = []string{schema.ColumnKeysUnknown}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("version 2 decoded as\n%+v\nwant\n%+v", got, want)
	}
}

// TestHeader: a record's header gives its spans and its size written out
// (what version 3 took for it) without decoding it; a record of version 3
// gives its own length.
func TestHeader(t *testing.T) {
	b := sampleBatch(40)
	// A literal of 124 to 127 bytes takes a two-byte tag where version 3's
	// length took one: the size still counts version 3's.
	b.Spans[5].StatusMessage = strings.Repeat("x", 125)
	old := encode(nil, b, version3)
	enc := Encode(nil, b)
	if spans, size, err := Header(enc); err != nil || spans != 40 || size != int64(len(old)) {
		t.Fatalf("Header = %d spans, size %d, %v; want 40, %d", spans, size, err, len(old))
	}
	if len(enc)*2 > len(old) {
		t.Errorf("record of %d bytes, %d written out: want at most half", len(enc), len(old))
	}
	if spans, size, err := Header(old); err != nil || spans != 40 || size != int64(len(old)) {
		t.Fatalf("Header of version 3 = %d spans, size %d, %v; want 40, %d", spans, size, err, len(old))
	}
	// A damaged size is capped, so the drain's sums of sizes cannot overflow.
	damaged := bytes.Clone(enc)
	copy(damaged[1:9], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	if _, size, err := Header(damaged); err != nil || size != 1<<56 {
		t.Fatalf("Header of a record sized 2^64-1 = size %d, %v; want 2^56", size, err)
	}
}

// TestReadsVersion3: a record of format version 3 (every string written
// out, no size in the header), as a durable log written before version 4
// holds, decodes whole. testdata/version3.bin is such a record, of
// sampleBatch(24), written by the version 3 encoder (commit 48a8eba); the
// durable log's upgrade test replays it.
func TestReadsVersion3(t *testing.T) {
	want := filledBatch(t, 3, 2)
	got, err := Decode(encode(nil, want, version3))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("version 3 decoded as\n%+v\nwant\n%+v", got, want)
	}
	old, err := os.ReadFile("testdata/version3.bin")
	if err != nil {
		t.Fatal(err)
	}
	sample := sampleBatch(24)
	if !bytes.Equal(encode(nil, sample, version3), old) {
		t.Fatal("testdata/version3.bin is not the version 3 encoding of sampleBatch(24)")
	}
	if got, err := Decode(old); err != nil || !reflect.DeepEqual(got, sample) {
		t.Fatalf("testdata/version3.bin decoded with %v to %d spans, not sampleBatch(24)", err, len(got.Spans))
	}
}

// TestRingCounts: every string and []string field of a row has a ring of
// its own (a field added to the rows raises the counts).
func TestRingCounts(t *testing.T) {
	count := func(typ reflect.Type, kind reflect.Type) (n int) {
		for i := range typ.NumField() {
			if typ.Field(i).Type == kind {
				n++
			}
		}
		return n
	}
	str, strs := reflect.TypeFor[string](), reflect.TypeFor[[]string]()
	span, content := reflect.TypeFor[schema.Span](), reflect.TypeFor[schema.Content]()
	if n := count(span, str); n != spanStrings {
		t.Errorf("schema.Span has %d string fields, spanStrings is %d", n, spanStrings)
	}
	if n := count(span, strs); n != spanSlices {
		t.Errorf("schema.Span has %d []string fields, spanSlices is %d", n, spanSlices)
	}
	if n := count(content, str); n != contentStrings {
		t.Errorf("schema.Content has %d string fields, contentStrings is %d", n, contentStrings)
	}
	if n := count(content, strs); n != 0 {
		t.Errorf("schema.Content has %d []string fields, rowcodec gives it none", n)
	}
}
