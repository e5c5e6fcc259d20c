package receiver

import (
	"net/http"
	"strings"
	"testing"

	"github.com/tallyhq/tally/ingest"
	"github.com/tallyhq/tally/ingest/wire"
	"github.com/tallyhq/tally/schema"
)

func TestJSONNestingEdges(t *testing.T) {
	for _, tc := range []struct {
		name  string
		json  string
		limit int
		want  bool
	}{
		{"at the limit", strings.Repeat("[", 128) + strings.Repeat("]", 128), 128, false},
		{"one over", strings.Repeat("[", 129) + strings.Repeat("]", 129), 128, true},
		{"mixed at the limit", strings.Repeat(`{"a":[`, 2) + "1" + strings.Repeat("]}", 2), 4, false},
		{"mixed one over", strings.Repeat(`{"a":[`, 2) + "{}" + strings.Repeat("]}", 2), 4, true},
		{"brackets in strings ignored", `["[[[[", "{{{{"]`, 1, false},
		{"escaped quote stays in the string", `["\"[[[[", "\\"]`, 1, false},
		{"siblings do not add up", `[[],[],[],[]]`, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := jsonNestingExceeds([]byte(tc.json), tc.limit); got != tc.want {
				t.Errorf("jsonNestingExceeds(%s, %d) = %v, want %v", tc.json, tc.limit, got, tc.want)
			}
		})
	}
}

// FuzzDecode feeds arbitrary bytes to the receiver as protobuf and as JSON
// bodies: it must never panic and never answer anything but 200, 400 or 413
// (the sink accepts everything, so no 5xx is legitimate).
func FuzzDecode(f *testing.F) {
	f.Add(protoBody(f, traces("a", "bad-b")), false)
	f.Add(protoBody(f, traces()), false)
	f.Add([]byte{0x0a, 0x02, 0x0a, 0x00}, false)
	f.Add([]byte{0xff, 0xff, 0xff}, false)
	f.Add([]byte{}, false)
	f.Add(jsonBody(f, traces("a", "bad-b")), true)
	f.Add(readTestdata(f, "span_int64_strings.json"), true)
	f.Add(readTestdata(f, "span_int64_numbers.json"), true)
	f.Add(readTestdata(f, "mixed_valid_invalid.json"), true)
	f.Add([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz"}]}]}]}`), true)
	f.Add([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"attributes":[{"key":"k","value":{"kvlistValue":{"values":[{"key":"x","value":{"intValue":"9"}}]}}}]}]}]}]}`), true)
	f.Add([]byte(`[[[[[[`), true)
	f.Add(badIDRequest(f), false)
	f.Add([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0102","spanId":"0000000000000001","links":[{"spanId":"01"}]}]}]}]}`), true)

	s := &sink{}
	h := newHandler(f, Config{}, s)
	f.Fuzz(func(t *testing.T, body []byte, asJSON bool) {
		contentType := contentProtobuf
		if asJSON {
			contentType = contentJSON
		}
		w := serve(h, request(body, contentType))
		switch w.Code {
		case http.StatusOK, http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		default:
			t.Fatalf("status %d for a %s body of %d bytes: %s", w.Code, contentType, len(body), w.Body.String())
		}
		s.mu.Lock()
		s.batches = s.batches[:0] // keep memory flat over a long run
		s.mu.Unlock()
	})
}

// BenchmarkExportProtobuf measures one 100-span protobuf request through the
// handler with a no-op normalizer and sink.
func BenchmarkExportProtobuf(b *testing.B) {
	body := protoBody(b, traces(spanNames(100)...))
	h := New(Config{}, func(ingest.Batch, wire.Traces, string) (ingest.Batch, ingest.Rejected) {
		return ingest.Batch{Spans: make([]schema.Span, 1)}, ingest.Rejected{}
	}, &sink{}, nil, nil, nil)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		w := serve(h, request(body, contentProtobuf))
		if w.Code != http.StatusOK {
			b.Fatalf("status %d", w.Code)
		}
	}
}
