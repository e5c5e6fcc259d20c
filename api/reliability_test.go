package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/tallyhq/tally/internal/tallytest"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/safety"
)

// reliabilityConfig is the review configuration the end-to-end signal
// runs are read under: effect classes, a registry every tool of the runs
// but drop_table matches, two caps, two repeats and six steps.
func reliabilityConfig(t *testing.T) []query.ReaderOption {
	t.Helper()
	policy, err := safety.ParsePolicy([]string{"wire_*=irreversible", "search_*=read", "refund=non_idempotent"})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := safety.ParseRegistry([]string{"wire_*", "search_*", "refund", "delete_account", "lookup_*", "chain"})
	if err != nil {
		t.Fatal(err)
	}
	caps, err := safety.ParseCaps([]string{"task=capped iterations=2 tokens=1000", "task=slow wall=1s"})
	if err != nil {
		t.Fatal(err)
	}
	return []query.ReaderOption{query.WithToolEffects(policy), query.WithToolRegistry(reg), query.WithRunCaps(caps),
		query.WithSignalLimits(safety.Limits{MinBackoff: 100 * time.Millisecond, MaxRepeats: 2, MaxSteps: 6, Lockstep: 20 * time.Millisecond})}
}

// refundTools offers refund(order string, amount number; both required)
// and search_docs(q).
const refundTools = `[{"type":"function","name":"refund","parameters":{"type":"object","properties":{"order":{"type":"string"},"amount":{"type":"number"}},"required":["order","amount"]}},` +
	`{"type":"function","name":"search_docs","parameters":{"type":"object","properties":{"q":{"type":"string"}}}}]`

// chainTools offers chain, whose schema is issue #41's exponential one:
// 20 $defs, each anyOf two references to the next, the last an object
// whose x is a string: 5·2^20 − 2 validation steps for {"x": 1}, over the
// default limit of 200,000.
func chainTools() string {
	var defs []string
	for i := range 20 {
		ref := fmt.Sprintf(`{"$ref":"#/$defs/d%d"}`, i+1)
		defs = append(defs, fmt.Sprintf(`"d%d":{"anyOf":[%s,%s]}`, i, ref, ref))
	}
	defs = append(defs, `"d20":{"type":"object","properties":{"x":{"type":"string"}}}`)
	return `[{"type":"function","name":"chain","parameters":{"$ref":"#/$defs/d0","$defs":{` + strings.Join(defs, ",") + `}}}]`
}

// reliabilityCase is one hand-built run and the signals it must raise,
// as kind@span key.
type reliabilityCase struct {
	name  string
	task  string
	spans []tallytest.Span
	want  []string
}

// reliabilityCases are the runs: each signal kind raised, and the runs the
// playbooks call fine raising none.
func reliabilityCases() []reliabilityCase {
	root := func(task string, end int, attrs ...attribute.KeyValue) tallytest.Span {
		return tallytest.Span{Key: "root", Name: "invoke_agent clerk", Start: 0, End: end, Attrs: append([]attribute.KeyValue{
			attribute.String("gen_ai.operation.name", "invoke_agent"), attribute.String("gen_ai.agent.name", "clerk"),
			attribute.String("task.name", task)}, attrs...)}
	}
	args := func(v string) attribute.KeyValue { return attribute.String("gen_ai.tool.call.arguments", v) }
	callID := func(v string) attribute.KeyValue { return attribute.String("gen_ai.tool.call.id", v) }
	approval := func(key string, start, end int, decision string) tallytest.Span {
		return tallytest.Span{Key: key, Parent: "root", Name: "approval", Start: start, End: end, Attrs: []attribute.KeyValue{
			attribute.String("tally.approval.decision", decision), attribute.String("tally.approval.by", "ana")}}
	}
	branch := func(key string) tallytest.Span {
		return tallytest.Span{Key: key, Parent: "root", Name: "invoke_agent " + key, Start: 1, End: 2000, Attrs: []attribute.KeyValue{
			attribute.String("gen_ai.operation.name", "invoke_agent"), attribute.String("gen_ai.agent.name", "fetcher")}}
	}
	// fetch fails in a branch at 10 ms and is retried (attempt 2) at retryAt.
	fetch := func(b string, retryAt int) []tallytest.Span {
		fail := tallytest.Tool(b+"1", b, "search_web", 10, 60, callID("c-"+b))
		fail.Error = "timeout"
		return []tallytest.Span{fail, tallytest.Tool(b+"2", b, "search_web", retryAt, retryAt+40, callID("c-"+b), attribute.Int("attempt", 2))}
	}
	lockstep := func(name string, at [3]int, want []string) reliabilityCase {
		spans := []tallytest.Span{root("parallel", 2100), branch("a"), branch("b"), branch("c")}
		for i, b := range []string{"a", "b", "c"} {
			spans = append(spans, fetch(b, at[i])...)
		}
		return reliabilityCase{name, "parallel", spans, want}
	}
	chats := func(n int) []tallytest.Span {
		var out []tallytest.Span
		for i := range n {
			// 300 in + 100 out tokens each.
			out = append(out, tallytest.Chat(fmt.Sprintf("chat%d", i+1), "root", "gpt-4o-mini", 10+i*100, 60+i*100, "", 300, 100))
		}
		return out
	}
	repeat := func(key string, start int) tallytest.Span {
		s := tallytest.Tool(key, "root", "lookup_order", start, start+50, args(`{"id":7}`))
		s.Error = "ValueError"
		return s
	}
	return []reliabilityCase{
		{"a tool the model was not offered", "hallucinated", []tallytest.Span{root("hallucinated", 500),
			tallytest.Chat("chat", "root", "gpt-4o-mini", 10, 100, refundTools, 50, 10),
			tallytest.Tool("tool", "root", "delete_account", 120, 150, args(`{}`))}, []string{"unknown_tool@tool"}},
		{"a tool outside the registry", "unregistered", []tallytest.Span{root("unregistered", 500),
			tallytest.Tool("tool", "root", "drop_table", 120, 150)}, []string{"unknown_tool@tool"}},
		{"a dry_run the schema does not know", "dryrun", []tallytest.Span{root("dryrun", 500),
			tallytest.Chat("chat", "root", "gpt-4o-mini", 10, 100, refundTools, 50, 10),
			tallytest.Tool("tool", "root", "refund", 120, 150, args(`{"order":"A1","amount":5,"dry_run":true}`))}, []string{"invalid_arguments@tool"}},
		{"a schema too complex to check", "complex", []tallytest.Span{root("complex", 500),
			tallytest.Chat("chat", "root", "gpt-4o-mini", 10, 100, chainTools(), 50, 10),
			tallytest.Tool("tool", "root", "chain", 120, 150, args(`{"x":1}`))}, []string{"unchecked_arguments@tool"}},
		{"valid arguments are fine", "valid", []tallytest.Span{root("valid", 500),
			tallytest.Chat("chat", "root", "gpt-4o-mini", 10, 100, refundTools, 50, 10),
			tallytest.Tool("tool", "root", "refund", 120, 150, args(`{"order":"A1","amount":5}`))}, nil},
		{"a wire nobody approved", "ungated", []tallytest.Span{root("ungated", 500),
			tallytest.Tool("wire", "root", "wire_transfer", 120, 150)}, []string{"ungated_action@wire"}},
		{"a wire after a rejection", "rejected", []tallytest.Span{root("rejected", 500), approval("ask", 10, 90, "rejected"),
			tallytest.Tool("wire", "root", "wire_transfer", 120, 150)}, []string{"ungated_action@wire"}},
		{"a wire approved by an event is fine", "approved", []tallytest.Span{func() tallytest.Span {
			r := root("approved", 500)
			r.Events = []tallytest.Event{{Name: "tally.approval", At: 100, Attrs: []attribute.KeyValue{
				attribute.String("tally.approval.decision", "approved"), attribute.String("tally.approval.by", "ana"), attribute.Int("tally.approval.wait_ms", 80)}}}
			return r
		}(), tallytest.Tool("wire", "root", "wire_transfer", 120, 150)}, nil},
		// The OTel contrib openai-agents-v2 instrumentation's guardrail span,
		// tripped, under the wire: denied, so it did not act.
		{"a wire a guardrail blocked", "guarded", []tallytest.Span{root("guarded", 500),
			tallytest.Tool("wire", "root", "wire_transfer", 120, 150),
			{Key: "guard", Parent: "wire", Name: "guardrail_check", Start: 121, End: 125, Attrs: []attribute.KeyValue{
				attribute.String("gen_ai.operation.name", "guardrail_check"), attribute.String("gen_ai.guardrail.name", "amount_limit"),
				attribute.Bool("gen_ai.guardrail.triggered", true)}}}, nil},
		// pydantic-ai deferring the call for approval: escalated.
		{"a wire deferred for approval", "deferred", []tallytest.Span{root("deferred", 500),
			tallytest.Tool("wire", "root", "wire_transfer", 120, 150, attribute.String("pydantic_ai.tool.deferral.name", "ApprovalRequired"))}, nil},
		// The OpenAI Agents SDK's rejection: the span ends in error with its text.
		{"a wire the user rejected", "refused", []tallytest.Span{root("refused", 500), func() tallytest.Span {
			w := tallytest.Tool("wire", "root", "wire_transfer", 120, 150)
			w.Error = "Tool execution was not approved."
			return w
		}()}, nil},
		// Three branches fail at 10 ms and retry at 1000, 1005 and 1010 ms.
		lockstep("three branches retrying in lockstep", [3]int{1000, 1005, 1010}, []string{"retry_storm@c2"}),
		lockstep("three branches with jitter are fine", [3]int{1000, 1400, 1900}, nil),
		{"seven tool calls, limit six", "busy", func() []tallytest.Span {
			spans := []tallytest.Span{root("busy", 1000)}
			for i := range 7 {
				spans = append(spans, tallytest.Tool(fmt.Sprintf("t%d", i+1), "root", "search_docs", 10+i*100, 50+i*100, args(fmt.Sprintf(`{"q":"%d"}`, i))))
			}
			return spans
		}(), []string{"runaway_loop@t7"}},
		{"the same failing lookup three times, limit two", "looping", []tallytest.Span{root("looping", 4000),
			repeat("l1", 10), repeat("l2", 1000), repeat("l3", 2000)}, []string{"runaway_loop@l3"}},
		// Three calls of 400 tokens: the third passes both 2 iterations and 1,000 tokens.
		{"over the iteration and token caps", "capped", append([]tallytest.Span{root("capped", 1000)}, chats(3)...),
			[]string{"budget_exceeded@chat3", "budget_exceeded@chat3"}},
		{"at the caps", "capped", append([]tallytest.Span{root("capped", 1000)}, chats(2)...), nil},
		// 3 s of wall clock, 2 s of it waiting for ana: 1 s active, at the 1 s cap.
		{"waiting for approval is not active time", "slow", []tallytest.Span{root("slow", 3000), approval("ask", 500, 2500, "approved")}, nil},
		{"active past the wall cap", "slow", []tallytest.Span{root("slow", 3000), approval("ask", 500, 1500, "approved")}, []string{"budget_exceeded@root"}},
		{"a typed partial result", "partial", []tallytest.Span{root("partial", 500, attribute.String("tally.run.incomplete", "iteration_limit"))},
			[]string{"budget_exceeded@root"}},
	}
}

// TestReliabilitySignalsEndToEnd: every signal kind from runs sent with the
// real OTel Go SDK, and the runs that must raise none, on each run's
// summary; then GET /signals counts them by kind, tool and task, and the
// tools' steps by status.
func TestReliabilitySignalsEndToEnd(t *testing.T) {
	opts := reliabilityConfig(t)
	tally := tallytest.Start(t, func(o *tallytest.Config) { o.Reader = query.NewReader(o.Store, opts...) })
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	perKind := map[safety.SignalKind]int{}
	for i, c := range reliabilityCases() {
		t.Run(c.name, func(t *testing.T) {
			id, ids := tallytest.SendSpans(t, tally.URL, "desk", base.Add(time.Duration(i)*10*time.Second), c.spans)
			keyOf := map[string]string{}
			for k, v := range ids {
				keyOf[v] = k
			}
			code, _, b := get(t, tally.URL+"/api/v1/runs/"+id, "")
			var d query.RunDetail
			if code != http.StatusOK || json.Unmarshal(b, &d) != nil {
				t.Fatalf("run: %d %.300s", code, b)
			}
			var got []string
			for _, s := range d.Summary.Signals {
				got = append(got, string(s.Kind)+"@"+keyOf[s.SpanID])
				if s.Reason == "" {
					t.Errorf("%s has no reason", s.Kind)
				}
				perKind[s.Kind]++
			}
			if c.task == "guarded" {
				g := d.Summary.Guardrails
				if len(g) != 1 || g[0].Name != "amount_limit" || g[0].SpanID != ids["guard"] || g[0].Triggered == nil || !*g[0].Triggered {
					t.Errorf("guardrails %+v, want amount_limit triggered", g)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("signals %v, want %v", got, c.want)
				for _, s := range d.Summary.Signals {
					t.Log(s.Reason)
				}
			}
		})
	}
	// Every kind but the two SendSafetyRun covers, raised at least once.
	for _, k := range safety.Kinds() {
		if k != safety.KindDuplicateSideEffect && k != safety.KindUnsafeRetry && perKind[k] == 0 {
			t.Errorf("no run raised %s", k)
		}
	}

	// GET /signals over the same runs: the counts per kind are the runs'.
	code, _, b := get(t, tally.URL+"/api/v1/signals?since=3h", "")
	var rep query.SignalsReport
	if code != http.StatusOK || json.Unmarshal(b, &rep) != nil {
		t.Fatalf("signals: %d %s", code, b)
	}
	// unknown_tool 2, invalid_arguments 1, ungated_action 2, retry_storm 1,
	// runaway_loop 2, budget_exceeded 4 (two on one run), unchecked_arguments
	// 1: 13 in 12 runs of 20.
	want := map[string]int{"duplicate_side_effect": 0, "unsafe_retry": 0, "unknown_tool": 2, "invalid_arguments": 1, "ungated_action": 2,
		"retry_storm": 1, "runaway_loop": 2, "budget_exceeded": 4, "unchecked_arguments": 1}
	if fmt.Sprint(rep.Kinds) != fmt.Sprint(want) || rep.Signals != 13 || rep.RunsWithSignals != 12 || rep.RunsRead != 20 {
		t.Errorf("report kinds %v signals %d in %d of %d runs; want %v, 13 in 12 of 20", rep.Kinds, rep.Signals, rep.RunsWithSignals, rep.RunsRead, want)
	}
	tools := map[string]query.ToolReview{}
	for _, tr := range rep.Tools {
		tools[tr.Tool] = tr
	}
	// search_web: 3 failures (timeouts: ambiguous) and 3 ok retries in each
	// of two lockstep runs; lookup_order: 3 ValueErrors.
	if w := tools["search_web"]; w.Effect != safety.EffectRead || w.Steps != 12 || w.Statuses[safety.StatusAmbiguous] != 6 || w.Statuses[safety.StatusOK] != 6 || w.Signals != 1 {
		t.Errorf("search_web %+v", w)
	}
	if l := tools["lookup_order"]; l.Steps != 3 || l.Statuses[safety.StatusError] != 3 || l.Effect != safety.EffectUnknown {
		t.Errorf("lookup_order %+v", l)
	}
	// Six wires: three ok (two ungated, one approved), one denied by a
	// guardrail, one escalated, one rejected (denied).
	if w := tools["wire_transfer"]; w.Effect != safety.EffectIrreversible || w.Steps != 6 || w.Signals != 2 ||
		w.Statuses[safety.StatusOK] != 3 || w.Statuses[safety.StatusDenied] != 2 || w.Statuses[safety.StatusEscalated] != 1 {
		t.Errorf("wire_transfer %+v", w)
	}
	if rep.RunsByTask["capped"] != 2 || rep.RunsByTask["slow"] != 2 {
		t.Errorf("runs by task %v", rep.RunsByTask)
	}
	// By task: budget_exceeded on capped (2 signals, 1 run), slow (1) and partial (1).
	code, _, b = get(t, tally.URL+"/api/v1/signals?since=3h&by=task&kind=budget_exceeded", "")
	rep = query.SignalsReport{}
	if code != http.StatusOK || json.Unmarshal(b, &rep) != nil {
		t.Fatalf("signals by task: %d %s", code, b)
	}
	byTask := map[string][2]int{}
	for _, g := range rep.Groups {
		byTask[g.Task] = [2]int{g.Signals, g.Runs}
	}
	if fmt.Sprint(byTask) != fmt.Sprint(map[string][2]int{"capped": {2, 1}, "partial": {1, 1}, "slow": {1, 1}}) {
		t.Errorf("budget_exceeded by task %v", byTask)
	}
	if code, _, _ := get(t, tally.URL+"/api/v1/signals?by=colour", ""); code != http.StatusBadRequest {
		t.Errorf("by=colour: %d, want 400", code)
	}
}

// TestCapsFromData: five runs of task support sent with the OTel Go SDK —
// four that ended ok with 1, 2, 3 and 4 model calls (400 tokens each), 0
// to 3 tool calls, 1 to 4 s of wall clock, the second waiting 1 s for an
// approval, and one that failed after 12 calls. Over the four successful
// runs (R-7 percentiles): iterations p50 2.5, p99 3.97, suggested
// ⌈2.5 × 3.97⌉ = 10; tokens p99 1,588, suggested 3,970; tool calls p99
// 2.97, suggested 8; active time 1, 1 (2 s less the 1 s wait), 3, 4 s: p50
// 2 s, p99 3.97 s, suggested 9.925 s rounded up to 10 s. The failed run
// (12 calls, 4,800 tokens) is over two suggested caps: one run exceeded.
func TestCapsFromData(t *testing.T) {
	caps, err := safety.ParseCaps([]string{"task=support iterations=5"})
	if err != nil {
		t.Fatal(err)
	}
	tally := tallytest.Start(t, func(o *tallytest.Config) { o.Reader = query.NewReader(o.Store, query.WithRunCaps(caps)) })
	base := time.Now().Add(-2 * time.Hour).Truncate(time.Millisecond)
	run := func(i, chats, tools, wallMs int, waitFrom, waitTo int, fail bool) string {
		spans := []tallytest.Span{{Key: "root", Name: "invoke_agent helper", End: wallMs, Attrs: []attribute.KeyValue{
			attribute.String("gen_ai.operation.name", "invoke_agent"), attribute.String("gen_ai.agent.name", "helper"),
			attribute.String("task.name", "support")}}}
		if fail {
			spans[0].Error = "ValueError"
		}
		for c := range chats {
			spans = append(spans, tallytest.Chat(fmt.Sprintf("chat%d", c), "root", "gpt-4o-mini", 10+c*100, 60+c*100, "", 300, 100))
		}
		if waitTo > 0 {
			spans = append(spans, tallytest.Span{Key: "ask", Parent: "root", Name: "approval", Start: waitFrom, End: waitTo,
				Attrs: []attribute.KeyValue{attribute.String("tally.approval.decision", "approved")}})
		}
		for k := range tools {
			start := max(waitTo, 10+chats*100) + k*100
			spans = append(spans, tallytest.Tool(fmt.Sprintf("tool%d", k), "root", "search_docs", start, start+50))
		}
		id, _ := tallytest.SendSpans(t, tally.URL, "desk", base.Add(time.Duration(i)*time.Minute), spans)
		return id
	}
	run(0, 1, 0, 1000, 0, 0, false)
	run(1, 2, 1, 2000, 500, 1500, false)
	run(2, 3, 2, 3000, 0, 0, false)
	run(3, 4, 3, 4000, 0, 0, false)
	failed := run(4, 12, 0, 2000, 0, 0, true)

	code, _, b := get(t, tally.URL+"/api/v1/caps?since=3h", "")
	var rep query.CapsReport
	if code != http.StatusOK || json.Unmarshal(b, &rep) != nil || len(rep.Tasks) != 1 {
		t.Fatalf("caps: %d %s", code, b)
	}
	tc := rep.Tasks[0]
	near := func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
	for _, c := range []struct {
		name              string
		got               query.CapFigure
		p50, p99, suggest float64
		exceeded          int
	}{
		{"iterations", tc.Iterations, 2.5, 3.97, 10, 1},
		{"tool calls", tc.ToolCalls, 1.5, 2.97, 8, 0},
		{"tokens", tc.Tokens, 1000, 1588, 3970, 1},
		{"active ms", tc.ActiveMs, 2000, 3970, 10000, 0},
	} {
		if !near(c.got.P50, c.p50) || !near(c.got.P99, c.p99) || c.got.Suggested != c.suggest || c.got.Exceeded != c.exceeded {
			t.Errorf("%s %+v, want p50 %v p99 %v suggested %v exceeded %d", c.name, c.got, c.p50, c.p99, c.suggest, c.exceeded)
		}
	}
	if tc.Task != "support" || tc.Runs != 5 || tc.Successful != 4 || tc.VerdictsFrom != "status" || tc.RunsWaiting != 1 || tc.WaitMs.P50 != 1000 ||
		tc.Exceeded != 1 || len(tc.ExceededRuns) != 1 || tc.ExceededRuns[0] != failed || !tc.FewRuns {
		t.Errorf("task caps %+v", tc)
	}
	if !strings.HasPrefix(tc.Spec, "task=support iterations=10 tokens=3970 cost=") || !strings.HasSuffix(tc.Spec, " wall=10s") {
		t.Errorf("spec %q", tc.Spec)
	}
	if fmt.Sprint(tc.Configured) != "[task=support iterations=5]" {
		t.Errorf("configured %v", tc.Configured)
	}
	// A suggested spec is a valid --run-cap.
	if _, err := safety.ParseCaps([]string{tc.Spec}); err != nil {
		t.Errorf("spec %q does not parse: %v", tc.Spec, err)
	}
	for _, q := range []string{"multiplier=0.5", "multiplier=11", "multiplier=x"} {
		if code, _, _ := get(t, tally.URL+"/api/v1/caps?"+q, ""); code != http.StatusBadRequest {
			t.Errorf("caps?%s: %d, want 400", q, code)
		}
	}
}
