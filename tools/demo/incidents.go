package demo

import (
	"encoding/json"
	"time"

	"go.opentelemetry.io/otel/attribute"
)

// The incidents, Run.Incident: what tally's safety review (package safety,
// the Reliability page) raises on the run, given the effect classes make
// run configures (scripts/run.sh: tally serve --tool-effects
// issue_refund=non_idempotent,merge_pull_request=irreversible,…).
const (
	// IncidentDuplicateSideEffect: the support-bot planner issues the
	// same refund twice (issue_refund, non_idempotent, twice ok with the
	// same arguments): duplicate_side_effect.
	IncidentDuplicateSideEffect = "duplicate_side_effect"
	// IncidentUnknownTool: the research-agent researcher asks for
	// search_arxiv, which it was not offered (its call records the tools
	// it was offered, gen_ai.tool.definitions): unknown_tool, whatever the
	// configuration.
	IncidentUnknownTool = "unknown_tool"
	// IncidentUngatedAction: the code-assistant planner merges a pull
	// request (merge_pull_request, irreversible) with no approval before
	// it: ungated_action.
	IncidentUngatedAction = "ungated_action"
	// IncidentGatedAction: the same merge after a human approved it (a
	// span with tally.approval.decision approved, 20–90 s long): no signal,
	// and a wait the caps' active time leaves out.
	IncidentGatedAction = "gated_action"
)

// incident is a safety incident a run of the traffic carries.
type incident int

const (
	incidentNone incident = iota
	incidentDuplicateRefund
	incidentUnknownTool
	incidentUngatedMerge
	incidentGatedMerge
)

// String is the incident's Run.Incident name.
func (i incident) String() string {
	switch i {
	case incidentDuplicateRefund:
		return IncidentDuplicateSideEffect
	case incidentUnknownTool:
		return IncidentUnknownTool
	case incidentUngatedMerge:
		return IncidentUngatedAction
	case incidentGatedMerge:
		return IncidentGatedAction
	}
	return ""
}

// plannerActs says whether the planner carries the incident out itself,
// with a side-effecting tool after its sub-agents reported (only in a run
// that does not fail: a failed run ends before).
func (i incident) plannerActs() bool {
	return i == incidentDuplicateRefund || i == incidentUngatedMerge || i == incidentGatedMerge
}

// scheduled is an incident due from a service's from-th run on.
type scheduled struct {
	from int
	kind incident
}

// incidentSchedule says which runs carry an incident: per service, each
// incident goes to the first run of the service from the from-th on that
// can carry it (a run that ends in error has no planner actions), in
// order. It depends on nothing but the order of runs, so Generate's runs
// stay a prefix of a longer Generate's.
var incidentSchedule = map[string][]scheduled{
	"support-bot":    {{from: 2, kind: incidentDuplicateRefund}},
	"code-assistant": {{from: 2, kind: incidentGatedMerge}, {from: 4, kind: incidentUngatedMerge}},
	"research-agent": {{from: 2, kind: incidentUnknownTool}},
}

// incidents tracks the schedule while runs are built.
type incidents struct {
	runs map[string]int // runs of each service so far
	next map[string]int // index of each service's next incident
}

func newIncidents() *incidents {
	return &incidents{runs: map[string]int{}, next: map[string]int{}}
}

// offer counts a new run of service and returns the incident it should
// carry, incidentNone for none.
func (d *incidents) offer(service string) incident {
	d.runs[service]++
	list := incidentSchedule[service]
	if k := d.next[service]; k < len(list) && d.runs[service] >= list[k].from {
		return list[k].kind
	}
	return incidentNone
}

// carried records that a run of service carried the incident named (its
// Run.Incident): the service's next one is due from then on.
func (d *incidents) carried(service, name string) {
	list := incidentSchedule[service]
	if k := d.next[service]; name != "" && k < len(list) && list[k].kind.String() == name {
		d.next[service]++
	}
}

// plannerAction builds what the planner does for a planner incident,
// from start: asks for the service's side-effecting tool and calls it
// (twice for the duplicate refund: the same arguments, another call id;
// after an approval for the gated merge). It returns the spans, their
// usage and when the next span may start.
func (b *builder) plannerAction(start time.Time, planner *session, inc incident) ([]SpanSpec, usage, time.Time) {
	name := "merge_pull_request"
	calls := 1
	if inc == incidentDuplicateRefund {
		name, calls = "issue_refund", 2
	}
	args := b.toolArgs(name)
	var out []SpanSpec
	var total usage
	t := start
	for range calls {
		s, u := b.chat(t, &plannerAgent, plannerAgent.style, planner, chatShape{output: [2]int{40, 160}})
		out = append(out, s)
		total.add(u)
		t = s.End.Add(b.msBetween(2, 15))
		if inc == incidentGatedMerge {
			a := b.approval(t, name)
			out = append(out, a)
			t = a.End.Add(b.msBetween(5, 30))
		}
		spans, end, toks := b.toolCall(t, &plannerAgent, name, args, b.callID(plannerAgent.model), 1, true)
		out = append(out, spans...)
		planner.add(toks)
		t = end.Add(b.msBetween(5, 40))
	}
	return out, total, t
}

// approval is a human's approval of the tool, asked at start, decided
// 20–90 s later: a span of its own, as tally reads approvals.
func (b *builder) approval(start time.Time, tool string) SpanSpec {
	return SpanSpec{
		SpanID: b.spanID(), Name: "approval " + tool, Kind: kindInternal,
		Start: start, End: start.Add(b.msBetween(20000, 90000)),
		Attributes: []attribute.KeyValue{
			attribute.String("tally.approval.decision", "approved"),
			attribute.String("tally.approval.by", "dana@acme.example"),
			attribute.String("tally.approval.tool", tool),
		},
	}
}

// hallucinatedTool is the tool the researcher asks for in an
// incidentUnknownTool run: it sounds like one of its tools, and is not.
const hallucinatedTool = "search_arxiv"

// hallucinate builds, from start, a chat call of agent a recording the
// tools it was offered (its own) that asks for hallucinatedTool, and the
// call of that tool, which fails: no such tool. It returns the spans,
// their usage and when the next span may start.
func (b *builder) hallucinate(start time.Time, a *agentProfile, sess *session) ([]SpanSpec, usage, time.Time) {
	s, u := b.chat(start, a, a.style, sess, chatShape{output: [2]int{20, 80}, offered: true})
	t := s.End.Add(b.msBetween(2, 15))
	call := SpanSpec{SpanID: b.spanID(), Name: "execute_tool " + hallucinatedTool, Kind: kindInternal, Start: t}
	call.End = t.Add(b.msBetween(1, 6))
	msg := "tool " + hallucinatedTool + " not found: the agent has no such tool"
	call.Status, call.StatusMessage = codeError, msg
	call.Attributes = []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("gen_ai.tool.name", hallucinatedTool),
		attribute.String("gen_ai.tool.call.id", b.callID(a.model)),
		attribute.String("gen_ai.tool.type", "function"),
		attribute.String("gen_ai.agent.name", a.name),
		attribute.String("gen_ai.tool.call.arguments", jsonString(searchArgs{Query: b.conv.topic, MaxResults: 5})),
		attribute.String("error.type", "tool_not_found"),
	}
	call.Events = []EventSpec{exception(call.End, "tool_not_found", msg)}
	sess.add(30) // the error the model sees
	return []SpanSpec{s, call}, u, call.End.Add(b.msBetween(5, 30))
}

// toolDefinitions is the gen_ai.tool.definitions value of the agent's
// tools: what its model is offered, in the semantic conventions' shape.
func toolDefinitions(a *agentProfile) string {
	type def struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	defs := make([]def, 0, len(a.tools))
	for _, wt := range a.tools {
		defs = append(defs, def{Type: "function", Name: wt.name, Description: tools[wt.name].description,
			Parameters: json.RawMessage(toolSchemas[wt.name])})
	}
	return jsonString(defs)
}
