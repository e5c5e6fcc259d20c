package demo

import (
	"math"
	"math/rand/v2"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk"
)

// The PCG streams (all seeded with Config.Seed): the conversation plan's;
// run i of the traffic uses stream i, and incidentStream+i for the spans of
// the safety incident it carries (so that the rest of the run is what it
// would be without); evaluation run j uses evalStream+j.
const (
	planStream     = math.MaxUint64
	incidentStream = 1 << 62
	evalStream     = 1 << 63
)

// Probabilities of the things that do not happen in every run.
const (
	failRunRate      = 0.07 // a run ends in error
	repeatLoopRate   = 0.10 // an invocation loops on one tool with the same arguments
	acmeRate         = 0.35 // a code_fix coder invocation first asks acme-llm-7b
	secondaryRate    = 0.6  // a task's second or third sub-agent takes part
	parallelToolRate = 0.2  // a chat asks for two tools at once
	streamRate       = 0.5  // an Anthropic or Gemini call streams
)

// Generate builds cfg.Runs runs in memory, without network. The same Config
// (Seed, Start, Spans) gives the same runs; Endpoint, Headers, Rate, Gzip and
// JSON are ignored. Runs are grouped into conversations of 2–4 runs of one
// user; conversations start 20–90 s apart and overlap in time. A few of them
// carry safety incidents (see Run.Incident). With cfg.Spans 0 and
// cfg.Runs ≥ EvalMinRuns, the EvalRuns runs of the evaluation experiment
// follow them (see Trial), after the last one ended.
func Generate(cfg Config) []Run {
	if cfg.Runs <= 0 {
		return nil
	}
	if !cfg.Start.IsZero() {
		return generate(cfg, cfg.Start.UTC())
	}
	// Build once to learn how long the traffic lasts, then again so that it
	// ends a second ago. The runs do not depend on the base time.
	probe := generate(cfg, time.Unix(0, 0).UTC())
	var last time.Time
	for _, r := range probe {
		if r.Root.End.After(last) {
			last = r.Root.End
		}
	}
	length := last.Sub(time.Unix(0, 0))
	return generate(cfg, time.Now().UTC().Add(-length-time.Second).Truncate(time.Microsecond))
}

func generate(cfg Config, base time.Time) []Run {
	plan := rand.New(rand.NewPCG(uint64(cfg.Seed), planStream))
	runs := make([]Run, 0, cfg.Runs+EvalRuns)
	convStart := base
	natural := cfg.Spans <= 0
	due := newIncidents()
	for len(runs) < cfg.Runs {
		a := &apps[plan.IntN(len(apps))]
		tk := &a.tasks[plan.IntN(len(a.tasks))]
		conv := conversation{
			app:   a,
			task:  tk,
			id:    uuid(plan),
			user:  "user-" + pad4(1+plan.IntN(a.users)),
			topic: tk.topics[plan.IntN(len(tk.topics))],
		}
		size := 2 + plan.IntN(3)
		at := convStart
		for turn := 0; turn < size && len(runs) < cfg.Runs; turn++ {
			i := uint64(len(runs))
			rng := rand.New(rand.NewPCG(uint64(cfg.Seed), i))
			x := extras{side: rand.New(rand.NewPCG(uint64(cfg.Seed), incidentStream+i))}
			if natural {
				x.incident = due.offer(a.service)
			}
			r := buildRun(rng, conv, turn, at, cfg.Spans, x)
			due.carried(a.service, r.Incident)
			runs = append(runs, r)
			at = r.Root.End.Add(thinkTime[0] + time.Duration(plan.Int64N(int64(thinkTime[1]-thinkTime[0]))))
		}
		convStart = convStart.Add(time.Duration(20+plan.IntN(71)) * time.Second)
	}
	if natural && cfg.Runs >= EvalMinRuns {
		runs = append(runs, evalRuns(cfg.Seed, runs)...)
	}
	return runs
}

// conversation is what the runs of one conversation share; an evaluation
// run is a conversation of its own, without id or user.
type conversation struct {
	app   *app
	task  *task
	id    string
	user  string
	topic string
	// trial is the evaluation trial the run is, nil for the traffic.
	trial *Trial
}

// builder builds one run.
type builder struct {
	rng  *rand.Rand
	conv conversation
	// side draws what an incident adds to the run (see aside).
	side *rand.Rand
	// drawn are the argument options drawn per tool (see choose).
	drawn map[string][]bool
}

// aside runs f with the builder drawing from its side source: the spans f
// builds do not change what the run's own source draws for the rest.
func (b *builder) aside(f func()) {
	own := b.rng
	b.rng = b.side
	defer func() { b.rng = own }()
	f()
}

// extras is what a run carries besides what its own source draws.
type extras struct {
	incident incident
	side     *rand.Rand
}

// invocation is one sub-agent call the planner makes, with its span budget.
type invocation struct {
	agent  *agentProfile
	budget int
	fail   bool
	// hallucinate: before its final answer, the agent asks for a tool it
	// was not offered (incidentUnknownTool).
	hallucinate bool
}

// buildRun builds the run; spans > 0 makes it exactly that many spans.
// x.incident is carried when the run can (Run.Incident says whether it did).
func buildRun(rng *rand.Rand, conv conversation, turn int, start time.Time, spans int, x extras) Run {
	b := &builder{rng: rng, conv: conv, side: x.side}
	traceID := b.traceID()
	invs, planChat, finalChat, extraChats := b.plan(spans)
	failed := conv.trial == nil && finalChat && len(invs) > 0 && rng.Float64() < failRunRate
	inc := x.incident
	switch {
	case inc == incidentUnknownTool && len(invs) > 0 && len(invs[0].agent.tools) > 0:
		invs[0].hallucinate = true
	case inc.plannerActs() && !failed && finalChat:
	default:
		inc = incidentNone
	}
	if failed {
		// The failing sub-agent is the last one; the planner stops there, so
		// the span of its final answer goes to the sub-agent's last step.
		finalChat = false
		invs[len(invs)-1].budget++
		invs[len(invs)-1].fail = true
	}

	root := SpanSpec{
		SpanID: b.spanID(),
		Name:   "invoke_agent planner",
		Kind:   kindInternal,
		Start:  start,
	}
	var total usage
	t := start.Add(b.msBetween(5, 30))

	planner := newSession(&plannerAgent, b.between(plannerAgent.prefix))
	planner.add(b.between([2]int{50, 400}) + turn*b.between([2]int{400, 1500})) // the request and earlier turns
	if planChat {
		s, u := b.chat(t, &plannerAgent, plannerAgent.style, planner, chatShape{output: [2]int{100, 400}})
		root.Children = append(root.Children, s)
		total.add(u)
		t = s.End.Add(b.msBetween(5, 40))
	}
	var failure string
	for _, inv := range invs {
		s, u, result := b.invoke(t, inv)
		root.Children = append(root.Children, s)
		total.add(u)
		planner.add(result)
		t = s.End.Add(b.msBetween(5, 40))
		if inv.fail {
			failure = errorTypeOf(s)
		}
	}
	if inc.plannerActs() {
		b.aside(func() {
			spans, u, end := b.plannerAction(t, planner, inc)
			root.Children = append(root.Children, spans...)
			total.add(u)
			t = end
		})
	}
	for i := 0; i < extraChats; i++ {
		s, u := b.chat(t, &plannerAgent, plannerAgent.style, planner, chatShape{output: [2]int{80, 300}})
		root.Children = append(root.Children, s)
		total.add(u)
		t = s.End.Add(b.msBetween(5, 40))
	}
	if finalChat {
		s, u := b.chat(t, &plannerAgent, plannerAgent.style, planner, chatShape{output: [2]int{300, 1500}, final: true})
		root.Children = append(root.Children, s)
		total.add(u)
		t = s.End
	}
	root.End = t.Add(b.msBetween(3, 20))
	root.Attributes = []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "invoke_agent"),
		attribute.String("gen_ai.agent.name", plannerAgent.name),
		attribute.String("gen_ai.agent.id", agentID(conv.app.service, plannerAgent.name)),
		attribute.String("gen_ai.agent.version", plannerAgent.version),
	}
	if conv.trial == nil {
		root.Attributes = append(root.Attributes,
			attribute.String("gen_ai.conversation.id", conv.id),
			attribute.String("user.id", conv.user))
	}
	root.Attributes = append(root.Attributes, attribute.String("task.name", conv.task.name))
	if conv.trial != nil {
		root.Attributes = append(root.Attributes, attribute.String(CaseAttribute, conv.trial.Case))
	}
	root.Attributes = append(root.Attributes, total.aggregated()...)
	if failed {
		root.Status, root.StatusMessage = codeError, "sub-agent "+invs[len(invs)-1].agent.name+" failed: "+failure
		root.Attributes = append(root.Attributes, attribute.String("error.type", failure))
	}
	if conv.trial == nil {
		// An evaluation run's verdict is posted to tally by Send instead.
		root.Events = append(root.Events, evaluation(traceID.String(), failed, root.End))
	}
	return Run{
		TraceID:        traceID,
		Service:        conv.app.service,
		Resource:       resourceOf(conv.app),
		Task:           conv.task.name,
		ConversationID: conv.id,
		UserID:         conv.user,
		Failed:         failed,
		Incident:       inc.String(),
		Trial:          conv.trial,
		Root:           root,
	}
}

// plan decides which sub-agents the planner invokes and with how many spans
// each, and whether the planner makes its planning and final chat calls and
// how many extra ones. With spans > 0 the run has exactly that many spans.
func (b *builder) plan(spans int) (invs []invocation, planChat, finalChat bool, extraChats int) {
	agents := b.conv.task.agents
	if tr := b.conv.trial; tr != nil {
		// An evaluation run: every agent of the task but the summarizer
		// (whose prompt starts with the time, a new configuration each
		// run), so that all the runs of a version share one configuration.
		for _, a := range agents {
			switch {
			case a == &summarizer:
				continue
			case a == &coder && tr.Version == 2:
				a = &coderV2
			}
			invs = append(invs, invocation{agent: a, budget: b.between(a.natural)})
		}
		return invs, true, true, 0
	}
	if spans <= 0 {
		invs = append(invs, invocation{agent: agents[0], budget: b.between(agents[0].natural)})
		for _, a := range agents[1:] {
			if b.rng.Float64() < secondaryRate {
				invs = append(invs, invocation{agent: a, budget: b.between(a.natural)})
			}
		}
		return invs, true, true, 0
	}
	switch spans {
	case 1:
		return nil, false, false, 0
	case 2:
		return nil, true, false, 0
	}
	remaining := spans - 3 // root, planning chat, final chat
	for remaining > 0 {
		if remaining == 1 {
			return invs, true, true, extraChats + 1
		}
		a := agents[0]
		if b.rng.IntN(2) == 1 {
			a = agents[1+b.rng.IntN(len(agents)-1)]
		}
		n := min(b.between(a.big), remaining)
		if remaining-n < 2 {
			n = remaining
		}
		invs = append(invs, invocation{agent: a, budget: n})
		remaining -= n
	}
	return invs, true, true, extraChats
}

// invoke builds an "invoke_agent <name>" span using exactly inv.budget spans
// (at least 2), and returns its usage and the size of its answer in tokens.
func (b *builder) invoke(start time.Time, inv invocation) (SpanSpec, usage, int) {
	a := inv.agent
	span := SpanSpec{
		SpanID: b.spanID(),
		Name:   "invoke_agent " + a.name,
		Kind:   kindInternal,
		Start:  start,
	}
	var total usage
	t := start.Add(b.msBetween(2, 15))
	if a.bigPrompt[0] > 0 {
		// One call per remaining span, each with a fresh large prompt.
		for i := 1; i < inv.budget; i++ {
			last := i == inv.budget-1
			s, u := b.chat(t, a, a.style, nil, chatShape{output: [2]int{200, 700}, final: true, fail: last && inv.fail})
			span.Children = append(span.Children, s)
			total.add(u)
			t = s.End.Add(b.msBetween(5, 30))
		}
	} else {
		sess := newSession(a, b.between(a.prefix))
		sess.add(b.between([2]int{100, 600})) // the planner's instructions
		left := inv.budget - 2                // the invoke span and the final answer
		repeat := b.rng.Float64() < repeatLoopRate
		if a == &coder && b.conv.task.name == "code_fix" && left >= 1 && b.conv.trial == nil && b.rng.Float64() < acmeRate {
			// A short prompt (below the 1024-token minimum cacheable prefix
			// tally assumes for a model it does not know): the self-hosted
			// model is judged below_min_prefix, not a silent cache miss.
			s, u := b.chat(t, a, usageClientCost, newSession(a, b.between([2]int{400, 1000})), chatShape{model: &acmeLLM, output: [2]int{5, 40}, final: true})
			span.Children = append(span.Children, s)
			total.add(u)
			t = s.End.Add(b.msBetween(5, 30))
			left--
		}
		steps := 0
		for left > 0 {
			if repeat && steps > 0 {
				if n := 3 + b.rng.IntN(2); left >= 2*n {
					spans, u, end := b.repeatLoop(t, a, sess, n)
					span.Children = append(span.Children, spans...)
					total.add(u)
					t = end
					left -= 2 * n
					repeat = false
					continue
				}
			}
			if left == 1 {
				// No room for a chat and a tool: one last call of a tool.
				name := b.pickTool(a, "")
				calls, end, toks := b.toolCall(t, a, name, b.toolArgs(name), b.callID(a.model), 1, true)
				span.Children = append(span.Children, calls...)
				sess.add(toks)
				t = end.Add(b.msBetween(5, 30))
				left = 0
				break
			}
			s, u := b.chat(t, a, a.style, sess, chatShape{output: [2]int{30, 200}})
			span.Children = append(span.Children, s)
			total.add(u)
			left--
			t = s.End.Add(b.msBetween(2, 15))
			k := 1
			if left >= 2 && b.rng.Float64() < parallelToolRate {
				k = 2
			}
			end := t
			first := ""
			for i := 0; i < k; i++ {
				name := b.pickTool(a, first)
				first = name
				calls, e, toks := b.toolCall(t, a, name, b.toolArgs(name), b.callID(a.model), left-(k-1-i), false)
				span.Children = append(span.Children, calls...)
				left -= len(calls)
				sess.add(toks)
				if e.After(end) {
					end = e
				}
			}
			t = end.Add(b.msBetween(5, 30))
			steps++
		}
		if inv.hallucinate {
			b.aside(func() {
				spans, u, end := b.hallucinate(t, a, sess)
				span.Children = append(span.Children, spans...)
				total.add(u)
				t = end
			})
		}
		s, u := b.chat(t, a, a.style, sess, chatShape{output: [2]int{200, 1200}, final: true, fail: inv.fail})
		span.Children = append(span.Children, s)
		total.add(u)
		t = s.End
	}
	span.End = t.Add(b.msBetween(2, 10))
	span.Attributes = []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "invoke_agent"),
		attribute.String("gen_ai.agent.name", a.name),
		attribute.String("gen_ai.agent.id", agentID(b.conv.app.service, a.name)),
		attribute.String("gen_ai.agent.version", a.version),
	}
	if b.conv.id != "" {
		span.Attributes = append(span.Attributes, attribute.String("gen_ai.conversation.id", b.conv.id))
	}
	span.Attributes = append(span.Attributes, total.aggregated()...)
	if inv.fail {
		et := errorTypeOf(span.Children[len(span.Children)-1])
		span.Status, span.StatusMessage = codeError, "model call failed: "+et
		span.Attributes = append(span.Attributes, attribute.String("error.type", et))
	}
	return span, total, b.between([2]int{200, 800})
}

// repeatLoop builds n steps in which the agent calls the same tool with the
// same arguments, every call succeeding: a loop, not a retry.
func (b *builder) repeatLoop(start time.Time, a *agentProfile, sess *session, n int) ([]SpanSpec, usage, time.Time) {
	name := b.pickTool(a, "fetch_url")
	args := b.toolArgs(name)
	var spans []SpanSpec
	var total usage
	t := start
	for i := 0; i < n; i++ {
		s, u := b.chat(t, a, a.style, sess, chatShape{output: [2]int{30, 120}})
		spans = append(spans, s)
		total.add(u)
		t = s.End.Add(b.msBetween(2, 15))
		calls, end, toks := b.toolCall(t, a, name, args, b.callID(a.model), 1, true)
		spans = append(spans, calls...)
		sess.add(toks)
		t = end.Add(b.msBetween(5, 30))
	}
	return spans, total, t
}

// pickTool draws one of the agent's tools by weight, never avoid.
func (b *builder) pickTool(a *agentProfile, avoid string) string {
	sum := 0
	for _, t := range a.tools {
		if t.name != avoid {
			sum += t.weight
		}
	}
	n := b.rng.IntN(sum)
	for _, t := range a.tools {
		if t.name == avoid {
			continue
		}
		if n < t.weight {
			return t.name
		}
		n -= t.weight
	}
	return a.tools[0].name
}

// resourceOf is the resource of the app's spans.
func resourceOf(a *app) []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.String("service.name", a.service),
		attribute.String("service.version", "1.8.2"),
		attribute.String("deployment.environment.name", "demo"),
		attribute.String("telemetry.sdk.language", "go"),
		attribute.String("telemetry.sdk.name", "opentelemetry"),
		attribute.String("telemetry.sdk.version", sdk.Version()),
	}
}

// evaluation is the run's graded outcome, the GenAI semantic conventions'
// gen_ai.evaluation.result event on the root span: a failed run fails; of
// the others, those whose trace id ends in 0 or 1 (one in eight) are judged
// wrong answers. Decided from the trace id, not the random source, so the
// runs themselves are what they were before runs were graded.
func evaluation(traceID string, failed bool, at time.Time) EventSpec {
	label, score, why := "pass", 1.0, "the answer resolves the ticket"
	if last := traceID[len(traceID)-1]; failed || last == '0' || last == '1' {
		label, score, why = "fail", 0.0, "the answer does not resolve the ticket"
		if failed {
			why = "the run failed"
		}
	}
	return EventSpec{Name: "gen_ai.evaluation.result", Time: at, Attributes: []attribute.KeyValue{
		attribute.String("gen_ai.evaluation.name", "task_success"),
		attribute.Float64("gen_ai.evaluation.score.value", score),
		attribute.String("gen_ai.evaluation.score.label", label),
		attribute.String("gen_ai.evaluation.explanation", why),
	}}
}
