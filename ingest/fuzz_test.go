package ingest

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// FuzzNormalize decodes arbitrary bytes as an OTLP protobuf request and
// normalizes whatever decodes, under tight limits and every privacy action,
// checking it never panics and that every span is either kept or rejected.
func FuzzNormalize(f *testing.F) {
	f.Add(marshalled(f, loadFixture(f, "vercel_trip.json")))
	f.Add(marshalled(f, realisticRequest(f, 4)))
	f.Add([]byte{})
	opts := Options{
		Project: "fuzz",
		Limits:  Limits{MaxAttrValueBytes: 16, MaxContentBytes: 32, MaxAttrsPerSpan: 4, MaxEventsPerSpan: 2},
		Pricer:  &fakePricer{},
		Privacy: Privacy{Rules: map[string]Action{
			"user.id":                 ActionHash,
			"ai.toolCall.args":        ActionDrop,
			"gen_ai.tool.call.result": ActionRedact,
		}},
	}
	var u ptrace.ProtoUnmarshaler
	f.Fuzz(func(t *testing.T, data []byte) {
		td, err := u.UnmarshalTraces(data)
		if err != nil {
			return
		}
		batch, rej := Normalize(td, opts)
		if len(batch.Spans)+rej.Spans != td.SpanCount() {
			t.Fatalf("kept %d + rejected %d != %d spans", len(batch.Spans), rej.Spans, td.SpanCount())
		}
	})
}
