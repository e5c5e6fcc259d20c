package safety

import "strings"

// Guardrail is one guardrail check a run's spans recorded, and its verdict:
// Triggered nil when the span did not say (OpenInference's Python
// openai-agents instrumentation names the guardrail but not its verdict).
type Guardrail struct {
	SpanID       string `json:"span_id"`
	ParentSpanID string `json:"-"`
	Name         string `json:"name"`
	Triggered    *bool  `json:"triggered"`
}

// The attributes guardrail spans are recognised by, as the
// instrumentations send them: OpenInference's span kind GUARDRAIL and its
// JS openai-agents instrumentation's guardrail.triggered (processor.ts);
// the OpenTelemetry contrib openai-agents-v2 instrumentation's
// gen_ai.operation.name guardrail_check with gen_ai.guardrail.name and
// gen_ai.guardrail.triggered (span_processor.py; also openlit's).
const (
	GuardrailTriggeredAttribute   = "gen_ai.guardrail.triggered"
	GuardrailNameAttribute        = "gen_ai.guardrail.name"
	OIGuardrailTriggeredAttribute = "guardrail.triggered"
	OISpanKindAttribute           = "openinference.span.kind"
	GuardrailOperation            = "guardrail_check"
)

// GuardrailOf reads a span as a guardrail check: attr looks up its
// attributes; ok false when it is not one.
func GuardrailOf(spanID, parent, name, operation string, attr func(string) string) (Guardrail, bool) {
	if operation != GuardrailOperation && !strings.EqualFold(attr(OISpanKindAttribute), "GUARDRAIL") &&
		attr(GuardrailTriggeredAttribute) == "" && attr(OIGuardrailTriggeredAttribute) == "" {
		return Guardrail{}, false
	}
	g := Guardrail{SpanID: spanID, ParentSpanID: parent, Name: name}
	if n := attr(GuardrailNameAttribute); n != "" {
		g.Name = n
	}
	for _, k := range []string{GuardrailTriggeredAttribute, OIGuardrailTriggeredAttribute} {
		switch strings.ToLower(attr(k)) {
		case "true":
			t := true
			g.Triggered = &t
		case "false":
			f := false
			g.Triggered = &f
		}
	}
	return g, true
}
