package tallytest

import (
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
)

// SafetyPolicy is the tool effect policy SendSafetyRun's run is reviewed
// under (tally serve --tool-effects).
var SafetyPolicy = []string{"charge_*=irreversible", "upsert_*=idempotent", "search_*=read"}

// SendSafetyRun exports, through the real OTel Go SDK, one run of a
// cashier agent whose tool steps raise exactly two safety signals under
// SafetyPolicy, and returns its trace id and the span ids by step:
//
//	guard    guardrail pii  passed
//	approve1 approval       approved by ana for charge_card
//	charge1  charge_card    step pay-1, ok                   irreversible, gated
//	approve2 approval       approved by ana for charge_card
//	charge2  charge_card    step pay-1, ok again             → duplicate_side_effect
//	refund1  refund         call c9, error timeout           non_idempotent (declared): ambiguous
//	refund2  refund         call c9, attempt 2, ok           → unsafe_retry
//	search1  search_docs    call s1, error timeout           a read: no signal
//	search2  search_docs    call s1, ok
//	upsert1  upsert_profile step k, ok                       idempotent: no signal
//	upsert2  upsert_profile step k, ok
func SendSafetyRun(t testing.TB, endpoint string, base time.Time) (traceID string, spans map[string]string) {
	t.Helper()
	tool := func(key, name string, start int, fail string, attrs ...attribute.KeyValue) Span {
		s := Tool(key, "root", name, start, start+50, attrs...)
		s.Error = fail
		return s
	}
	approve := func(key string, start int) Span {
		return Span{Key: key, Parent: "root", Name: "approval charge_card", Start: start, End: start + 400, Attrs: []attribute.KeyValue{
			attribute.String("tally.approval.decision", "approved"), attribute.String("tally.approval.by", "ana"),
			attribute.String("tally.approval.tool", "charge_card")}}
	}
	return SendSpans(t, endpoint, "shop", base, []Span{
		{Key: "root", Name: "invoke_agent cashier", End: 9000, Attrs: []attribute.KeyValue{
			attribute.String("gen_ai.operation.name", "invoke_agent"), attribute.String("gen_ai.agent.name", "cashier"),
			attribute.String("task.name", "checkout")}},
		// An input guardrail that passed (the OTel contrib openai-agents-v2 shape).
		{Key: "guard", Parent: "root", Name: "guardrail_check", Start: 10, End: 20, Attrs: []attribute.KeyValue{
			attribute.String("gen_ai.operation.name", "guardrail_check"), attribute.String("gen_ai.guardrail.name", "pii"),
			attribute.Bool("gen_ai.guardrail.triggered", false)}},
		approve("approve1", 500),
		tool("charge1", "charge_card", 1000, "", attribute.String("gen_ai.step.id", "pay-1")),
		approve("approve2", 1500),
		tool("charge2", "charge_card", 2000, "", attribute.String("gen_ai.step.id", "pay-1")),
		tool("refund1", "refund", 3000, "timeout", attribute.String("gen_ai.tool.call.id", "c9"), attribute.String("tally.tool.effect", "non_idempotent")),
		tool("refund2", "refund", 4000, "", attribute.String("gen_ai.tool.call.id", "c9"), attribute.Int("attempt", 2),
			attribute.String("tally.tool.effect", "non_idempotent")),
		tool("search1", "search_docs", 5000, "timeout", attribute.String("gen_ai.tool.call.id", "s1")),
		tool("search2", "search_docs", 6000, "", attribute.String("gen_ai.tool.call.id", "s1")),
		tool("upsert1", "upsert_profile", 7000, "", attribute.String("gen_ai.step.id", "k")),
		tool("upsert2", "upsert_profile", 8000, "", attribute.String("gen_ai.step.id", "k")),
	})
}
