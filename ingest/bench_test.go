package ingest

import (
	"fmt"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/tallyhq/tally/ingest/wire"
	"github.com/tallyhq/tally/schema"
)

// realisticRequest builds one OTLP request of n spans shaped like an agent's
// export: per run, an invoke_agent root, chat spans with usage and messages,
// and execute_tool spans with arguments and results; about 20 attributes a
// span, one resource per 64 spans.
func realisticRequest(tb testing.TB, n int) ptrace.Traces {
	td := ptrace.NewTraces()
	var spans ptrace.SpanSlice
	var root pcommon.SpanID
	for i := 0; i < n; i++ {
		if i%64 == 0 {
			rs := td.ResourceSpans().AppendEmpty()
			putAttrs(tb, rs.Resource().Attributes(),
				"service.name", "trip-planner",
				"service.version", "1.4.2",
				"deployment.environment.name", "prod",
				"telemetry.sdk.name", "opentelemetry",
				"telemetry.sdk.language", "python",
				"telemetry.sdk.version", "1.38.0",
				"host.name", fmt.Sprintf("worker-%d", i/64),
			)
			ss := rs.ScopeSpans().AppendEmpty()
			ss.Scope().SetName("opentelemetry.instrumentation.openai_v2")
			ss.Scope().SetVersion("2.1b0")
			spans = ss.Spans()
		}
		sp := spans.AppendEmpty()
		run := i / 8
		sp.SetTraceID(pcommon.TraceID{0: 1, 14: byte(run >> 8), 15: byte(run)})
		sp.SetSpanID(pcommon.SpanID{0: 2, 6: byte(i >> 8), 7: byte(i)})
		start := uint64(1_775_044_800_000_000_000) + uint64(i)*1_000_000
		sp.SetStartTimestamp(pcommon.Timestamp(start))
		sp.SetEndTimestamp(pcommon.Timestamp(start + 750_000_000))
		common := []any{
			"gen_ai.conversation.id", fmt.Sprintf("conv-%d", run/4),
			"gen_ai.agent.name", "trip-agent",
			"gen_ai.agent.id", "asst_8Jd2",
			"user.id", "user-1234",
			"task.name", "plan_trip",
			"thread.id", int64(140234),
			"code.function", "run_step",
		}
		switch i % 8 {
		case 0:
			root = sp.SpanID()
			sp.SetName("invoke_agent trip-agent")
			putAttrs(tb, sp.Attributes(), append(common,
				"gen_ai.operation.name", "invoke_agent",
				"gen_ai.provider.name", "openai",
				"gen_ai.request.model", "gpt-4o",
				"gen_ai.usage.input_tokens", int64(5400),
				"gen_ai.usage.output_tokens", int64(700),
				"gen_ai.agent.description", "Plans trips",
				"gen_ai.system_instructions", `[{"type":"text","content":"You plan trips. Be concise."}]`,
				"session.start", "2026-04-01T12:00:00Z",
				"app.tenant", "acme",
				"app.plan", "enterprise",
				"app.region", "eu-west-1",
				"app.request_id", fmt.Sprintf("req-%08d", run),
			)...)
		case 1, 3, 5, 7:
			sp.SetName("chat gpt-4o")
			sp.SetKind(ptrace.SpanKindClient)
			sp.SetParentSpanID(root)
			putAttrs(tb, sp.Attributes(), append(common,
				"gen_ai.operation.name", "chat",
				"gen_ai.provider.name", "openai",
				"gen_ai.request.model", "gpt-4o",
				"gen_ai.response.model", "gpt-4o-2024-08-06",
				"gen_ai.response.id", fmt.Sprintf("chatcmpl-%d", i),
				"gen_ai.request.temperature", 0.2,
				"gen_ai.request.max_tokens", int64(1024),
				"gen_ai.response.finish_reasons", []any{"tool_calls"},
				"gen_ai.usage.input_tokens", int64(1350),
				"gen_ai.usage.output_tokens", int64(175),
				"gen_ai.usage.cache_read.input_tokens", int64(1024),
				"server.address", "api.openai.com",
				"server.port", int64(443),
				"gen_ai.input.messages", `[{"role":"user","parts":[{"type":"text","content":"Plan a weekend in Paris for two, with a museum and a good bistro."}]}]`,
				"gen_ai.output.messages", `[{"role":"assistant","parts":[{"type":"tool_call","id":"call_1","name":"get_weather","arguments":{"city":"Paris"}}]}]`,
			)...)
		default:
			sp.SetName("execute_tool get_weather")
			sp.SetParentSpanID(root)
			putAttrs(tb, sp.Attributes(), append(common,
				"gen_ai.operation.name", "execute_tool",
				"gen_ai.tool.name", "get_weather",
				"gen_ai.tool.call.id", fmt.Sprintf("call_%d", i),
				"gen_ai.tool.type", "function",
				"gen_ai.tool.description", "Current weather for a city",
				"gen_ai.tool.call.arguments", `{"units":"c","city":"Paris","days":2}`,
				"gen_ai.tool.call.result", `{"temp":21,"sky":"clear","wind_kmh":12}`,
				"gen_ai.tool.call.attempt", int64(1),
				"http.response.status_code", int64(200),
				"url.full", "https://weather.example/v1/current?city=Paris",
				"app.cache_hit", false,
			)...)
		}
	}
	return td
}

func marshalled(tb testing.TB, td ptrace.Traces) []byte {
	data, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// BenchmarkNormalize measures the ingest hot path for one 512-span request:
// protobuf decode plus Normalize.
func BenchmarkNormalize(b *testing.B) {
	const spans = 512
	data := marshalled(b, realisticRequest(b, spans))
	opts := Options{Project: "bench", Limits: DefaultLimits(), Pricer: &nopPricer{}}
	var d wire.Decoder
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		tr, err := d.Decode(data)
		if err != nil {
			b.Fatal(err)
		}
		batch, _ := NormalizeTraces(tr, opts)
		if len(batch.Spans) != spans {
			b.Fatalf("got %d spans", len(batch.Spans))
		}
	}
	b.ReportMetric(float64(spans*b.N)/b.Elapsed().Seconds(), "spans/s")
}

// BenchmarkNormalizePdata is BenchmarkNormalize through pdata, the path of
// JSON requests (and of every request before the wire decoder).
func BenchmarkNormalizePdata(b *testing.B) {
	const spans = 512
	data := marshalled(b, realisticRequest(b, spans))
	opts := Options{Project: "bench", Limits: DefaultLimits(), Pricer: &nopPricer{}}
	var u ptrace.ProtoUnmarshaler
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		td, err := u.UnmarshalTraces(data)
		if err != nil {
			b.Fatal(err)
		}
		batch, _ := Normalize(td, opts)
		if len(batch.Spans) != spans {
			b.Fatalf("got %d spans", len(batch.Spans))
		}
	}
	b.ReportMetric(float64(spans*b.N)/b.Elapsed().Seconds(), "spans/s")
}

// decodedRequest is a realistic request of n spans, decoded by the wire
// decoder, and the options the Normalize benchmarks run with.
func decodedRequest(b *testing.B, n int) (wire.Traces, Options) {
	var d wire.Decoder
	tr, err := d.Decode(marshalled(b, realisticRequest(b, n)))
	if err != nil {
		b.Fatal(err)
	}
	return tr, Options{Project: "bench", Limits: DefaultLimits(), Pricer: &nopPricer{}}
}

// BenchmarkNormalizeOnly is BenchmarkNormalize without the decode.
func BenchmarkNormalizeOnly(b *testing.B) {
	const spans = 512
	tr, opts := decodedRequest(b, spans)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		NormalizeTraces(tr, opts)
	}
	b.ReportMetric(float64(spans*b.N)/b.Elapsed().Seconds(), "spans/s")
}

// BenchmarkNormalizeInto is BenchmarkNormalizeOnly reusing one batch's
// slices from request to request, as the receiver does in front of the
// durable log.
func BenchmarkNormalizeInto(b *testing.B) {
	const spans = 512
	tr, opts := decodedRequest(b, spans)
	var batch Batch
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		batch, _ = NormalizeTracesInto(batch, tr, opts)
		if len(batch.Spans) != spans {
			b.Fatalf("got %d spans", len(batch.Spans))
		}
		batch = batch.Emptied()
	}
	b.ReportMetric(float64(spans*b.N)/b.Elapsed().Seconds(), "spans/s")
}

// BenchmarkDecodeOnly is the wire decoder alone.
func BenchmarkDecodeOnly(b *testing.B) {
	const spans = 512
	data := marshalled(b, realisticRequest(b, spans))
	var d wire.Decoder
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := d.Decode(data); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(spans*b.N)/b.Elapsed().Seconds(), "spans/s")
}

// BenchmarkUnmarshalOnly is pdata's floor: decoding the same bytes.
func BenchmarkUnmarshalOnly(b *testing.B) {
	const spans = 512
	data := marshalled(b, realisticRequest(b, spans))
	var u ptrace.ProtoUnmarshaler
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := u.UnmarshalTraces(data); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(spans*b.N)/b.Elapsed().Seconds(), "spans/s")
}

// nopPricer stands in for the catalog at a realistic cost (one call).
type nopPricer struct{}

func (nopPricer) Apply(s *schema.Span) { s.CostSource = "catalog" }
