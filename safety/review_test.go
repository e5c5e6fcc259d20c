package safety

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

const ms = uint64(time.Millisecond)

// kinds writes signals as kind@span.
func kinds(sigs []Signal) []string {
	var out []string
	for _, s := range sigs {
		out = append(out, string(s.Kind)+"@"+s.SpanID)
	}
	return out
}

// offered parses definitions into Tools, failing the test when it holds none.
func offered(t *testing.T, defs ...string) Tools {
	t.Helper()
	tools := Tools{}
	for _, d := range defs {
		if !tools.AddDefinitions(d) {
			t.Fatalf("no tools in %s", d)
		}
	}
	return tools
}

// TestToolDefinitionShapes: every shape the instrumentations send names
// its tools and their schemas.
func TestToolDefinitionShapes(t *testing.T) {
	for _, c := range []struct {
		name, defs string
		want       string // names, then whether the first has a schema
	}{
		// gen_ai.tool.definitions (GenAI conventions, flat function shape).
		{"genai", `[{"type":"function","name":"search","parameters":{"type":"object"}},{"type":"function","name":"send"}]`, "[search send] true"},
		// OpenAI chat format, as OpenInference's llm.tools.N.tool.json_schema carries it.
		{"openai", `{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}`, "[get_weather] true"},
		// Anthropic messages API.
		{"anthropic", `[{"name":"lookup","input_schema":{"type":"object"}}]`, "[lookup] true"},
		// Vercel ai.prompt.tools: a list of JSON strings, AI SDK 5's inputSchema.
		{"vercel", `["{\"type\":\"function\",\"name\":\"calc\",\"inputSchema\":{\"type\":\"object\"}}"]`, "[calc] true"},
		// Gemini.
		{"gemini", `[{"functionDeclarations":[{"name":"find","parameters":{"type":"object"}}]}]`, "[find] true"},
		{"no schema", `[{"name":"ping"}]`, "[ping] false"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tools := offered(t, c.defs)
			names := tools.Names()
			if got := fmt.Sprint(names, tools[names[0]].Schema != nil); got != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}
	for _, bad := range []string{``, `not json`, `[]`, `[{"description":"no name"}]`, `42`} {
		if (Tools{}).AddDefinitions(bad) {
			t.Errorf("AddDefinitions(%q) found tools", bad)
		}
	}
}

// TestOfferedSignals: unknown tools and invalid arguments against what the
// requesting model was offered, and the calls that must not raise them.
func TestOfferedSignals(t *testing.T) {
	schema := `[{"name":"refund","parameters":{"type":"object","properties":{"order":{"type":"string"},"amount":{"type":"number"},
		"opts":{"type":"object","properties":{"notify":{"type":"boolean"}}}},"required":["order","amount"]}},
		{"name":"search","parameters":{"type":"object","properties":{"q":{"type":"string"}},"additionalProperties":true}},
		{"name":"ping"}]`
	call := func(id, parent string, start uint64, tools Tools) Call {
		return Call{SpanID: id, ParentSpanID: parent, StartNs: start * ms, EndNs: (start + 10) * ms, Offered: tools}
	}
	step := func(id, parent, tool string, start uint64, args string) Step {
		return Step{SpanID: id, ParentSpanID: parent, Tool: tool, Status: StatusOK, StartNs: start * ms, EndNs: (start + 5) * ms, Args: args}
	}
	tools := offered(t, schema)
	reg, err := ParseRegistry([]string{"shop:refund", "shop:search*", "other:*"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		calls []Call
		steps []Step
		reg   *Registry
		want  []string
	}{
		{"valid arguments", []Call{call("llm", "agent", 0, tools)},
			[]Step{step("t", "agent", "refund", 20, `{"order":"A1","amount":5,"opts":{"notify":true}}`)}, nil, nil},
		{"a tool the model was not offered", []Call{call("llm", "agent", 0, tools)},
			[]Step{step("t", "agent", "delete_account", 20, `{}`)}, nil, []string{"unknown_tool@t"}},
		{"a dropped dry_run field is invalid", []Call{call("llm", "agent", 0, tools)},
			[]Step{step("t", "agent", "refund", 20, `{"order":"A1","amount":5,"dry_run":true}`)}, nil, []string{"invalid_arguments@t"}},
		{"an unknown nested field too", []Call{call("llm", "agent", 0, tools)},
			[]Step{step("t", "agent", "refund", 20, `{"order":"A1","amount":5,"opts":{"silent":true}}`)}, nil, []string{"invalid_arguments@t"}},
		{"a missing required field", []Call{call("llm", "agent", 0, tools)},
			[]Step{step("t", "agent", "refund", 20, `{"order":"A1"}`)}, nil, []string{"invalid_arguments@t"}},
		{"a wrong type", []Call{call("llm", "agent", 0, tools)},
			[]Step{step("t", "agent", "refund", 20, `{"order":"A1","amount":"five"}`)}, nil, []string{"invalid_arguments@t"}},
		{"arguments that are not JSON", []Call{call("llm", "agent", 0, tools)},
			[]Step{step("t", "agent", "refund", 20, `{"order":`)}, nil, []string{"invalid_arguments@t"}},
		{"a schema open to other fields", []Call{call("llm", "agent", 0, tools)},
			[]Step{step("t", "agent", "search", 20, `{"q":"x","lang":"en"}`)}, nil, nil},
		{"a tool with no schema takes anything", []Call{call("llm", "agent", 0, tools)},
			[]Step{step("t", "agent", "ping", 20, `{"x":1}`)}, nil, nil},
		{"no arguments recorded: not checked", []Call{call("llm", "agent", 0, tools)},
			[]Step{step("t", "agent", "refund", 20, "")}, nil, nil},
		{"no definitions recorded: nothing to check", []Call{call("llm", "agent", 0, nil)},
			[]Step{step("t", "agent", "delete_account", 20, `{}`)}, nil, nil},
		// The later sibling call offered only ping: the step after it is judged by it.
		{"the latest call before the step decides", []Call{call("llm1", "agent", 0, tools), call("llm2", "agent", 30, offered(t, `[{"name":"ping"}]`))},
			[]Step{step("t1", "agent", "refund", 20, `{"order":"A","amount":1}`), step("t2", "agent", "refund", 50, `{"order":"A","amount":1}`)},
			nil, []string{"unknown_tool@t2"}},
		// A tool span under its inference span is judged by it, whatever started later.
		{"the parent call decides", []Call{call("llm1", "agent", 0, offered(t, `[{"name":"ping"}]`)), call("llm2", "agent", 5, tools)},
			[]Step{step("t", "llm1", "refund", 20, `{}`)}, nil, []string{"unknown_tool@t"}},
		{"not in the registry", nil, []Step{step("t", "agent", "drop_table", 20, `{}`)}, reg, []string{"unknown_tool@t"}},
		{"in the registry", nil, []Step{step("t", "agent", "search_docs", 20, `{}`)}, reg, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Review(Run{Project: "shop", Calls: c.calls, Steps: c.steps}, Config{Registry: c.reg})
			if fmt.Sprint(kinds(got)) != fmt.Sprint(c.want) {
				t.Errorf("signals %v, want %v", kinds(got), c.want)
			}
		})
	}
	// The reason names the field the schema refused.
	got := Review(Run{Calls: []Call{call("llm", "agent", 0, tools)},
		Steps: []Step{step("t", "agent", "refund", 20, `{"order":"A1","amount":5,"dry_run":true}`)}}, Config{})
	if len(got) != 1 || !strings.Contains(got[0].Reason, "dry_run") {
		t.Errorf("reason %v, want it to name dry_run", got)
	}
	// A project without registry patterns has none.
	if configured, _ := reg.Allows("blog", "anything"); configured {
		t.Error("blog has a registry")
	}
	if _, err := ParseRegistry([]string{"shop:"}); err == nil {
		t.Error("empty pattern accepted")
	}
}

// TestSchemaReferencesAreNotFollowed: a schema from a span that refers
// to a file must not make the review read it: it compiles to nothing,
// so it checks nothing.
func TestSchemaReferencesAreNotFollowed(t *testing.T) {
	if compileStrict(`{"$ref":"file:///etc/passwd"}`) != nil {
		t.Error("a file reference compiled")
	}
	if compileStrict(`{"type":"object","properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"string"}}}`) == nil {
		t.Error("a local reference did not compile")
	}
}

// TestUngatedAction: irreversible steps need an approval decided before
// them; one approval gates one action.
func TestUngatedAction(t *testing.T) {
	step := func(id, tool string, start uint64, st Status) Step {
		return Step{SpanID: id, Tool: tool, Effect: EffectIrreversible, Status: st, StartNs: start * ms, EndNs: (start + 5) * ms}
	}
	appr := func(id, decision, tool string, asked, decided uint64) Approval {
		return Approval{SpanID: id, Decision: decision, By: "ana", Tool: tool, RequestedNs: asked * ms, DecidedNs: decided * ms}
	}
	for _, c := range []struct {
		name      string
		steps     []Step
		approvals []Approval
		want      []string
	}{
		{"no approval", []Step{step("w", "wire", 100, StatusOK)}, nil, []string{"ungated_action@w"}},
		{"approved before", []Step{step("w", "wire", 100, StatusOK)}, []Approval{appr("a", "approved", "", 10, 90)}, nil},
		{"approved for that tool", []Step{step("w", "wire", 100, StatusOK)}, []Approval{appr("a", "approved", "wire", 10, 90)}, nil},
		{"approved for another tool", []Step{step("w", "wire", 100, StatusOK)}, []Approval{appr("a", "approved", "delete", 10, 90)}, []string{"ungated_action@w"}},
		{"decided after it ran", []Step{step("w", "wire", 100, StatusOK)}, []Approval{appr("a", "approved", "", 10, 150)}, []string{"ungated_action@w"}},
		{"rejected, ran anyway", []Step{step("w", "wire", 100, StatusOK)}, []Approval{appr("a", "rejected", "", 10, 90)}, []string{"ungated_action@w"}},
		{"one approval, two wires", []Step{step("w1", "wire", 100, StatusOK), step("w2", "wire", 200, StatusOK)},
			[]Approval{appr("a", "approved", "", 10, 90)}, []string{"ungated_action@w2"}},
		{"denied: it did not act", []Step{step("w", "wire", 100, StatusDenied)}, nil, nil},
		{"a failed attempt still ran", []Step{step("w", "wire", 100, StatusAmbiguous)}, nil, []string{"ungated_action@w"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Review(Run{Steps: c.steps, Approvals: c.approvals}, Config{})
			if fmt.Sprint(kinds(got)) != fmt.Sprint(c.want) {
				t.Errorf("signals %v, want %v", kinds(got), c.want)
			}
		})
	}
	got := Review(Run{Steps: []Step{step("w", "wire", 100, StatusOK)}, Approvals: []Approval{appr("a", "rejected", "", 10, 90)}}, Config{})
	if len(got) != 1 || got[0].Reason != "irreversible tool wire ran although its approval was rejected by ana" {
		t.Errorf("reason %v", got)
	}
	for in, want := range map[string]string{"Approve": "approved", "denied": "rejected", "expired": "timeout", "pending": "pending"} {
		if d, ok := ParseDecision(in); !ok || d != want {
			t.Errorf("ParseDecision(%q) = %q %v, want %q", in, d, ok, want)
		}
	}
	if _, ok := ParseDecision("maybe"); ok {
		t.Error("maybe is a decision")
	}
}

// TestWaits: the union of waits, clipped; a pending one waits to the end.
func TestWaits(t *testing.T) {
	a := []Approval{
		{RequestedNs: 10, DecidedNs: 30},
		{RequestedNs: 20, DecidedNs: 40}, // overlaps: 10..40 is 30
		{RequestedNs: 60, DecidedNs: 70}, // 10
		{RequestedNs: 90},                // pending until the end at 100: 10
	}
	if got := WaitNs(a, 0, 100); got != 50 {
		t.Errorf("WaitNs = %d, want 50", got)
	}
	if got := ActiveTime(a, 0, 100); got != 50 {
		t.Errorf("ActiveTime = %d, want 50", got)
	}
	if got := WaitNs(a, 25, 65); got != 20 { // 25..40 and 60..65
		t.Errorf("clipped WaitNs = %d, want 20", got)
	}
}

// TestLockstepAndSteps: retries of different attempts starting together
// are a storm; the same tool retried by one chain is not; a run past the
// step limit is a runaway loop.
func TestLockstepAndSteps(t *testing.T) {
	fail := func(id, parent string, start uint64) Step {
		return Step{SpanID: id, ParentSpanID: parent, Tool: "api", Effect: EffectRead, Status: StatusAmbiguous, StartNs: start * ms, EndNs: (start + 10) * ms}
	}
	retry := func(id, parent string, start uint64) Step {
		s := fail(id, parent, start)
		s.Status, s.Retry = StatusOK, true
		return s
	}
	// A step limit of 6 for the lockstep runs, 4 for the step-count ones.
	l := Limits{MinBackoff: 100 * time.Millisecond, Lockstep: 20 * time.Millisecond, MaxSteps: 6}
	for _, c := range []struct {
		name     string
		steps    []Step
		want     []string
		maxSteps int
	}{
		// Three branches fail at 0, 2, 4 ms and all retry 1 s after: at 1010, 1015, 1025 (within 20 ms of 1010).
		{"three branches in lockstep", []Step{fail("a1", "A", 0), fail("b1", "B", 2), fail("c1", "C", 4),
			retry("a2", "A", 1010), retry("b2", "B", 1015), retry("c2", "C", 1025)}, []string{"retry_storm@c2"}, 0},
		// With jitter: 1010, 1300, 1700.
		{"three branches with jitter", []Step{fail("a1", "A", 0), fail("b1", "B", 2), fail("c1", "C", 4),
			retry("a2", "A", 1010), retry("b2", "B", 1300), retry("c2", "C", 1700)}, nil, 0},
		// Just past the window: 1010 and 1031.
		{"21 ms apart", []Step{fail("a1", "A", 0), fail("b1", "B", 2), retry("a2", "A", 1010), retry("b2", "B", 1031)}, nil, 0},
		{"20 ms apart is lockstep", []Step{fail("a1", "A", 0), fail("b1", "B", 2), retry("a2", "A", 1010), retry("b2", "B", 1030)}, []string{"retry_storm@b2"}, 0},
		{"five steps, limit four", []Step{fail("a", "A", 0), fail("b", "B", 1000), fail("c", "C", 2000), fail("d", "D", 3000), fail("e", "E", 4000)},
			[]string{"runaway_loop@e"}, 4},
		{"four steps", []Step{fail("a", "A", 0), fail("b", "B", 1000), fail("c", "C", 2000), fail("d", "D", 3000)}, nil, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			lim := l
			if c.maxSteps > 0 {
				lim.MaxSteps = c.maxSteps
			}
			got := Review(Run{Steps: c.steps}, Config{Limits: lim})
			if fmt.Sprint(kinds(got)) != fmt.Sprint(c.want) {
				t.Errorf("signals %v, want %v", kinds(got), c.want)
			}
		})
	}
}

// TestBudgets: caps by task and agent on iterations, tokens, cost and
// active time, each at its edge, and typed partial results.
func TestBudgets(t *testing.T) {
	caps, err := ParseCaps([]string{"task=checkout iterations=3 tokens=1000 cost=0.05", "agent=planner wall=2s", "project=other iterations=1"})
	if err != nil {
		t.Fatal(err)
	}
	// Four calls of 300 tokens and $0.015 each: 1,200 tokens (passes 1,000
	// at the fourth), $0.06 (passes $0.05 at the fourth), 4 calls (past 3
	// at the fourth).
	var calls []Call
	for i := range 4 {
		calls = append(calls, Call{SpanID: fmt.Sprintf("c%d", i+1), StartNs: uint64(i) * 100 * ms, EndNs: uint64(i)*100*ms + 50*ms, Tokens: 300, CostUSD: 0.015})
	}
	base := Run{Project: "shop", Task: "checkout", Agents: []string{"planner"}, RootSpanID: "root", Calls: calls,
		Tokens: 1200, CostUSD: 0.06, StartNs: 0, EndNs: uint64(5 * time.Second)}
	for _, c := range []struct {
		name string
		edit func(r *Run)
		want []string
	}{
		// 5 s of wall clock, 1 s waiting for approval: 4 s active, over 2 s.
		{"over every cap", func(r *Run) {
			r.Approvals = []Approval{{RequestedNs: uint64(time.Second), DecidedNs: uint64(2 * time.Second)}}
		},
			[]string{"budget_exceeded@root", "budget_exceeded@c4", "budget_exceeded@c4", "budget_exceeded@c4"}},
		{"at every cap", func(r *Run) {
			r.Calls, r.Tokens, r.CostUSD, r.EndNs = r.Calls[:3], 1000, 0.05, uint64(2*time.Second)
		}, nil},
		// 5 s wall, 3.5 s of it waiting: 1.5 s active.
		{"waits for approval are not active time", func(r *Run) {
			r.Task, r.Approvals = "other", []Approval{{RequestedNs: uint64(time.Second), DecidedNs: uint64(4500 * time.Millisecond)}}
		}, nil},
		{"another task, another agent", func(r *Run) { r.Task, r.Agents = "browse", []string{"writer"} }, nil},
		{"a typed partial result", func(r *Run) {
			r.Task, r.Agents, r.Incomplete = "browse", nil, []Incomplete{{SpanID: "root", Reason: "iteration_limit"}}
		}, []string{"budget_exceeded@root"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := base
			c.edit(&run)
			got := Review(run, Config{Caps: caps})
			if fmt.Sprint(kinds(got)) != fmt.Sprint(c.want) {
				t.Errorf("signals %v, want %v", kinds(got), c.want)
				for _, s := range got {
					t.Log(s.Reason)
				}
			}
		})
	}
	for _, bad := range []string{"task=x", "task=x agent=y cost=1", "iterations=0", "cost=-1", "wall=soon", "tokens", "colour=red cost=1"} {
		if _, err := ParseCaps([]string{bad}); err == nil {
			t.Errorf("ParseCaps(%q): no error", bad)
		}
	}
}

// TestGuardrailOf: the guardrail spans of each instrumentation, and spans
// that are not guardrails.
func TestGuardrailOf(t *testing.T) {
	attrs := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, c := range []struct {
		name, spanName, op string
		attr               func(string) string
		want               string // name/triggered, or "-" for not a guardrail
	}{
		{"otel contrib openai-agents-v2", "guardrail_check", "guardrail_check", attrs("gen_ai.guardrail.name", "pii", "gen_ai.guardrail.triggered", "true"), "pii/true"},
		{"openinference js", "pii_check", "", attrs("openinference.span.kind", "GUARDRAIL", "guardrail.triggered", "false"), "pii_check/false"},
		{"openinference python: no verdict", "pii_check", "", attrs("openinference.span.kind", "GUARDRAIL"), "pii_check/?"},
		{"a chat span", "chat", "chat", attrs("openinference.span.kind", "LLM"), "-"},
	} {
		g, ok := GuardrailOf("s", "p", c.spanName, c.op, c.attr)
		got := "-"
		if ok {
			v := "?"
			if g.Triggered != nil {
				v = fmt.Sprint(*g.Triggered)
			}
			got = g.Name + "/" + v
		}
		if got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

// TestRequesterMatchesScan: the indexed requester picks the call the
// definition's scan does, on random runs (ties in start broken the same
// way: the greatest span id among equal starts).
func TestRequesterMatchesScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	scan := func(s *Step, calls []Call) *Call {
		var sibling, latest *Call
		better := func(c, than *Call) bool {
			return than == nil || c.StartNs > than.StartNs || (c.StartNs == than.StartNs && c.SpanID > than.SpanID)
		}
		for i := range calls {
			c := &calls[i]
			if c.SpanID == s.ParentSpanID {
				return c
			}
			if c.StartNs > s.StartNs {
				continue
			}
			if better(c, latest) {
				latest = c
			}
			if c.ParentSpanID == s.ParentSpanID && better(c, sibling) {
				sibling = c
			}
		}
		if sibling != nil {
			return sibling
		}
		return latest
	}
	parents := []string{"a", "b", "c", "c1", "c7"}
	for run := range 500 {
		var calls []Call
		for i := range rng.IntN(12) {
			calls = append(calls, Call{SpanID: fmt.Sprintf("c%d", i), ParentSpanID: parents[rng.IntN(3)], StartNs: uint64(rng.IntN(20))})
		}
		x := newCallIndex(calls)
		for range 10 {
			s := &Step{SpanID: "s", ParentSpanID: parents[rng.IntN(len(parents))], StartNs: uint64(rng.IntN(25))}
			want, got := scan(s, calls), x.requester(s)
			if (want == nil) != (got == nil) || (want != nil && want.SpanID != got.SpanID) {
				t.Fatalf("run %d step %+v: requester %v, scan %v", run, s, got, want)
			}
		}
	}
}

// TestReviewFixes: a model's re-issued call (a new call id) after a timeout
// is an unsafe retry; a wildcard approval is not spent where a specific one
// fits; one fast chain of retries is not lockstep; schemas that combine
// with others are not closed.
func TestReviewFixes(t *testing.T) {
	step := func(id, call string, start uint64, st Status, retry bool) Step {
		return Step{SpanID: id, ParentSpanID: "agent", Tool: "refund", Effect: EffectNonIdempotent, Status: st, Retry: retry,
			CallID: call, StartNs: start * ms, EndNs: (start + 10) * ms}
	}
	got := Review(Run{Steps: []Step{step("a", "call_1", 0, StatusAmbiguous, false), step("b", "call_2", 1000, StatusOK, true)}}, Config{})
	if fmt.Sprint(kinds(got)) != "[unsafe_retry@b]" {
		t.Errorf("re-issued call: %v, want [unsafe_retry@b]", kinds(got))
	}
	// a1 fails, a2 retries it 1 ms after, fails, a3 retries a2 1 ms after:
	// two retries under the backoff, one chain: no lockstep.
	chain := []Step{step("a1", "c", 0, StatusError, false), step("a2", "c", 11, StatusError, true), step("a3", "c", 22, StatusOK, true)}
	for i := range chain {
		chain[i].Effect = EffectRead
	}
	got = Review(Run{Steps: chain}, Config{})
	if fmt.Sprint(kinds(got)) != "[retry_storm@a2 retry_storm@a3]" {
		t.Errorf("one chain: %v, want the two backoff storms only", kinds(got))
	}
	wire := func(id, tool string, start uint64) Step {
		return Step{SpanID: id, Tool: tool, Effect: EffectIrreversible, Status: StatusOK, StartNs: start * ms}
	}
	approvals := []Approval{{SpanID: "any", Decision: DecisionApproved, RequestedNs: 1 * ms, DecidedNs: 10 * ms},
		{SpanID: "r", Decision: DecisionApproved, Tool: "refund", RequestedNs: 1 * ms, DecidedNs: 20 * ms}}
	got = Review(Run{Steps: []Step{wire("s1", "refund", 100), wire("s2", "charge", 200)}, Approvals: approvals}, Config{})
	if len(got) != 0 {
		t.Errorf("specific then wildcard: %v, want none", kinds(got))
	}
	// A refusal decided after the step ran is not its reason.
	got = Review(Run{Steps: []Step{wire("s", "wire", 100)}, Approvals: []Approval{{SpanID: "x", Decision: DecisionRejected, RequestedNs: 50 * ms, DecidedNs: 150 * ms}}}, Config{})
	if len(got) != 1 || got[0].Reason != "irreversible tool wire ran with no approval before it" {
		t.Errorf("late refusal: %+v", got)
	}
	for _, c := range []struct {
		name, schema, args string
		valid              bool
	}{
		{"discriminated union", `{"type":"object","properties":{"method":{"enum":["card","bank"]}},"oneOf":[{"properties":{"method":{"const":"card"},"card":{"type":"string"}}},{"properties":{"method":{"const":"bank"},"iban":{"type":"string"}}}]}`,
			`{"method":"card","card":"4242"}`, true},
		{"allOf adds a property", `{"type":"object","properties":{"a":{"type":"string"}},"allOf":[{"properties":{"b":{"type":"number"}}}]}`, `{"a":"x","b":1}`, true},
		{"a union of whole objects is closed", `{"oneOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},{"type":"object","properties":{"b":{"type":"string"}},"required":["b"]}]}`,
			`{"a":"x","dry_run":true}`, false},
		{"nested plain object is closed", `{"type":"object","properties":{"o":{"type":"object","properties":{"x":{"type":"number"}}}}}`, `{"o":{"x":1,"y":2}}`, false},
	} {
		tools := Tools{}
		tools.AddDefinitions(`[{"name":"t","parameters":` + c.schema + `}]`)
		got := Review(Run{Calls: []Call{{SpanID: "l", Offered: tools}}, Steps: []Step{{SpanID: "s", Tool: "t", StartNs: 5, Args: c.args}}}, Config{})
		if (len(got) == 0) != c.valid {
			t.Errorf("%s: signals %v, want valid %v", c.name, got, c.valid)
		}
	}
}
