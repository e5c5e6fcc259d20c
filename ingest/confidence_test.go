package ingest

import (
	"os"
	"strings"
	"testing"

	"github.com/tallyhq/tally/pricing"
	"github.com/tallyhq/tally/schema"
)

// TestConfidence rates spans as the rules say, and only when the span
// shows the gap: a no-cache-read rule needs a cache-read count of 0 and a
// model whose cache reads are cheaper; a no-thoughts rule a span without a
// reasoning count; a stream rule a streamed span.
func TestConfidence(t *testing.T) {
	catalog, err := pricing.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	usage := func(in, out int, more ...any) []any {
		return append([]any{"gen_ai.operation.name", "chat", "gen_ai.usage.input_tokens", in, "gen_ai.usage.output_tokens", out}, more...)
	}
	for _, c := range []struct {
		name, scope, version string
		attrs                []any
		level, rule          string
	}{
		{"openai-v2 on gpt-4o: no cached count", "opentelemetry.instrumentation.openai_v2", "",
			usage(2500, 300, "gen_ai.system", "openai", "gen_ai.request.model", "gpt-4o"), schema.ConfidenceUpperBound, "otel-openai-v2-no-cache-read"},
		{"openai-v2 on a snapshot without prompt caching", "opentelemetry.instrumentation.openai_v2", "",
			usage(2500, 300, "gen_ai.system", "openai", "gen_ai.request.model", "gpt-4o-2024-05-13"), schema.ConfidenceExact, ""},
		{"openai-v2 when a cache count is there after all", "opentelemetry.instrumentation.openai_v2", "",
			usage(2500, 300, "gen_ai.system", "openai", "gen_ai.request.model", "gpt-4o", "gen_ai.usage.cache_read.input_tokens", 2048), schema.ConfidenceExact, ""},
		{"vertexai contrib on thinking Gemini: both gaps", "opentelemetry.instrumentation.vertexai", "",
			usage(6000, 350, "gen_ai.system", "vertex_ai", "gen_ai.request.model", "gemini-2.5-flash"), schema.ConfidenceApproximate,
			"otel-vertexai-contrib-no-cache-read; otel-vertexai-contrib-no-thoughts"},
		{"OpenLLMetry vertexai 0.62 (release): thoughts only", "opentelemetry.instrumentation.vertexai", "0.62.1",
			usage(6000, 350, "gen_ai.system", "vertex_ai", "gen_ai.request.model", "gemini-2.5-flash"), schema.ConfidenceLowerBound, "openllmetry-vertexai-no-thoughts"},
		{"OpenLLMetry anthropic streamed", "opentelemetry.instrumentation.anthropic", "0.62.1",
			usage(25, 174, "gen_ai.provider.name", "anthropic", "gen_ai.request.model", "claude-3-haiku-20240307", "gen_ai.is_streaming", true),
			schema.ConfidenceUpperBound, "openllmetry-anthropic-stream-output"},
		{"OpenLLMetry anthropic streamed, older attribute", "opentelemetry.instrumentation.anthropic", "0.40.0",
			usage(25, 174, "gen_ai.system", "Anthropic", "gen_ai.request.model", "claude-3-haiku-20240307", "llm.is_streaming", true),
			schema.ConfidenceUpperBound, "openllmetry-anthropic-stream-output"},
		{"OpenLLMetry anthropic not streamed", "opentelemetry.instrumentation.anthropic", "0.62.1",
			usage(25, 171, "gen_ai.provider.name", "anthropic", "gen_ai.request.model", "claude-3-haiku-20240307", "gen_ai.is_streaming", false),
			schema.ConfidenceExact, ""},
		{"contrib anthropic pre-release is not OpenLLMetry", "opentelemetry.instrumentation.anthropic", "2.0b0.dev",
			usage(25, 174, "gen_ai.provider.name", "anthropic", "gen_ai.request.model", "claude-3-haiku-20240307", "gen_ai.is_streaming", true),
			schema.ConfidenceExact, ""},
		{"Strands with Anthropic drops the cache", "strands.telemetry.tracer", "",
			usage(40, 200, "gen_ai.system", "anthropic", "gen_ai.request.model", "claude-sonnet-4-5"), schema.ConfidenceLowerBound, "strands-anthropic-no-cache"},
		{"no price", "opentelemetry.instrumentation.openai_v2", "",
			usage(100, 10, "gen_ai.system", "openai", "gen_ai.request.model", "no-such-model-9"), schema.ConfidenceUnpriced, ""},
		{"no usage, no cost", "opentelemetry.instrumentation.openai_v2", "",
			[]any{"gen_ai.operation.name", "chat", "gen_ai.system", "openai", "gen_ai.request.model", "gpt-4o"}, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRequest(t, c.scope)
			r.td.ResourceSpans().At(0).ScopeSpans().At(0).Scope().SetVersion(c.version)
			r.span("chat", c.attrs...)
			batch, rej := Normalize(r.td, Options{Project: "p", Pricer: catalog})
			if rej.Spans != 0 || len(batch.Spans) != 1 {
				t.Fatalf("normalized %d spans, rejected %d: %s", len(batch.Spans), rej.Spans, rej.Message)
			}
			s := batch.Spans[0]
			rule := attrMap(s.AttrKeys, s.AttrValues)[AttrCostConfidenceRule]
			if s.CostConfidence != c.level || rule != c.rule {
				t.Errorf("rated %q by %q, want %q by %q", s.CostConfidence, rule, c.level, c.rule)
			}
			ex := Explain(s, Options{Pricer: catalog})
			if c.level == "" {
				if ex.Confidence != nil {
					t.Errorf("explain: confidence %+v on a span without cost", ex.Confidence)
				}
				return
			}
			if ex.Confidence == nil || ex.Confidence.Level != c.level || ex.Confidence.Rule != c.rule {
				t.Errorf("explain: confidence %+v, want %q by %q", ex.Confidence, c.level, c.rule)
			}
		})
	}
}

// TestUsageRecord: a Logfire log of an inference is a usage record; a
// Logfire span, or a log that is not an inference, is not.
func TestUsageRecord(t *testing.T) {
	for _, c := range []struct {
		name  string
		attrs []any
		want  uint8
	}{
		{"streaming response log", []any{"logfire.span_type", "log", "gen_ai.operation.name", "chat", "gen_ai.request.model", "gpt-4o",
			"gen_ai.usage.input_tokens", 10, "gen_ai.usage.output_tokens", 2}, 1},
		{"pre-4.31 log without usage", []any{"logfire.span_type", "log", "gen_ai.operation.name", "chat", "gen_ai.request.model", "gpt-4o"}, 1},
		{"the request span", []any{"logfire.span_type", "span", "gen_ai.operation.name", "chat", "gen_ai.request.model", "gpt-4o"}, 0},
		{"a log that is no call", []any{"logfire.span_type", "log", "message", "hello"}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRequest(t, "logfire.openai")
			r.span("x", c.attrs...)
			batch, _ := Normalize(r.td, Options{Project: "p"})
			if got := batch.Spans[0].UsageRecord; got != c.want {
				t.Errorf("usage_record %d, want %d", got, c.want)
			}
		})
	}
}

// TestConfidenceRulesDocumented keeps docs/instrumentations.md's rules
// table and the README's instrumentation table in step with the rules:
// every rule is named in both, and each says why and where it was read.
func TestConfidenceRulesDocumented(t *testing.T) {
	docs, err := os.ReadFile("../docs/instrumentations.md")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range ConfidenceRules() {
		if seen[r.Name] {
			t.Errorf("rule %s twice", r.Name)
		}
		seen[r.Name] = true
		for file, text := range map[string][]byte{"docs/instrumentations.md": docs, "README.md": readme} {
			if !strings.Contains(string(text), "`"+r.Name+"`") {
				t.Errorf("rule %s is not in %s", r.Name, file)
			}
		}
		if r.Source == "" || r.Instrumentation == "" || r.Reason == "" || r.Gap == 0 || len(r.Scopes) == 0 {
			t.Errorf("rule %s: needs scopes, a gap, an instrumentation, a reason and a source", r.Name)
		}
	}
}

// TestConfidenceReasonOfClientCost: a client-sent cost rated by a rule
// says both, apart.
func TestConfidenceReasonOfClientCost(t *testing.T) {
	catalog, err := pricing.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	r := newRequest(t, "opentelemetry.instrumentation.openai_v2")
	r.td.ResourceSpans().At(0).ScopeSpans().At(0).Scope().SetVersion("")
	r.span("chat", "gen_ai.operation.name", "chat", "gen_ai.system", "openai", "gen_ai.request.model", "gpt-4o",
		"gen_ai.usage.input_tokens", 2500, "gen_ai.usage.output_tokens", 300, "gen_ai.usage.cost", 0.009)
	batch, _ := Normalize(r.td, Options{Project: "p", Pricer: catalog})
	ex := Explain(batch.Spans[0], Options{Pricer: catalog})
	want := "the client's own cost, from the usage it read; sends prompt_tokens and completion_tokens only"
	if ex.Confidence == nil || ex.Confidence.Level != "upper_bound" || !strings.HasPrefix(ex.Confidence.Reason, want) {
		t.Fatalf("confidence %+v, want upper_bound with a reason starting %q", ex.Confidence, want)
	}
}
