// Package demo produces realistic AI-agent traffic: runs of a planner agent
// that invokes sub-agents, which call models of several providers (with prompt
// caching, streaming, reasoning tokens) and tools (with realistic latencies,
// flaky calls and retries), recorded with the OpenTelemetry GenAI conventions.
//
// Generate builds the runs in memory; Send exports the very same runs through
// the real OpenTelemetry Go SDK (otlptracehttp) to an OTLP/HTTP endpoint;
// ExportRequest turns them into an OTLP protobuf request. Everything is
// deterministic for a given Config.Seed and Config.Start.
//
// The traffic exercises what tally reports on:
//   - services support-bot, research-agent and code-assistant; tasks
//     triage_ticket, answer_question, research_report and code_fix (task.name
//     on the root span);
//   - a root "invoke_agent planner" span with aggregated usage, invoking one to
//     three sub-agents (researcher, coder, summarizer, triager), each looping
//     over chat calls and tool calls;
//   - providers anthropic (claude-sonnet-4-5), openai (gpt-4o, gpt-4o-mini),
//     gcp.gemini (gemini-2.5-flash, with reasoning tokens) and a self-hosted
//     "acme-llm-7b" (provider acme) that reports its own cost;
//   - healthy prompt caching everywhere except the summarizer, whose large
//     prompts (3000–6000 tokens) start with a timestamp and never hit the cache;
//   - fetch_url fails with a timeout on about 25% of attempts and is retried
//     (same gen_ai.tool.call.id, gen_ai.tool.call.attempt 2 or 3); web_search
//     is rate limited on about 5% of attempts; some runs end in error;
//   - a sub-agent (triager) instrumented with deprecated names (gen_ai.system,
//     gen_ai.usage.prompt_tokens/completion_tokens, and its OpenAI prompt
//     cache reads as gen_ai.usage.cache_read_input_tokens), and Anthropic calls
//     (researcher) reported additively, as Anthropic's API and pass-through
//     instrumentations do: gen_ai.usage.input_tokens excludes the cache reads
//     and writes, which come as their own attributes; every other call reports
//     input inclusive of cache, as the spec says;
//   - invoke_agent spans repeat the inclusive usage (input including cache)
//     of the chat calls below them, so the root's usage equals the run's
//     total counted on inference spans;
//   - now and then a repeat loop: the same tool called with the same arguments
//     three or four times after it succeeded;
//   - every agent's gen_ai.agent.version on its invoke_agent spans;
//   - safety incidents tally's review flags (Run.Incident, incidents.go): a
//     refund issued twice (duplicate_side_effect), a tool the model was not
//     offered (unknown_tool), a merge nobody approved (ungated_action), and a
//     merge after a human's approval (no signal) — the first and the last two
//     with the effect classes make run gives tally serve (--tool-effects
//     issue_refund=non_idempotent,merge_pull_request=irreversible);
//   - after the traffic, an evaluation experiment (Trial, eval.go): each
//     task's cases tried several times (langfuse.experiment.item.id), and
//     code_fix's cases by a candidate coder too, a second version of the task
//     that is worse; Send posts the verdicts to tally's outcomes API, so
//     pass@k and pass^k per case and the comparison of the two versions show.
package demo

import (
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope the demo spans are recorded under.
const ScopeName = "github.com/tallyhq/tally/tools/demo"

// Config says what to generate and where to send it.
type Config struct {
	// Endpoint is the OTLP/HTTP base URL, e.g. http://127.0.0.1:4318; spans
	// are posted to Endpoint + "/v1/traces". Only Send uses it.
	Endpoint string
	// Headers are sent with every export request, e.g. "Authorization":
	// "Bearer <key>". Only Send uses them.
	Headers map[string]string
	// Runs is the number of agent runs (traces) of the traffic to produce;
	// from EvalMinRuns on (with Spans 0), the EvalRuns runs of the
	// evaluation experiment follow them.
	Runs int
	// Seed makes the traffic deterministic: the same seed gives the same runs,
	// ids, attributes and timestamps relative to Start.
	Seed int64
	// Start is the base time of the span timestamps. Zero means: end the
	// simulated traffic about now (now minus the simulated time span).
	Start time.Time
	// Rate is the number of runs Send emits per second; 0 = as fast as possible.
	Rate float64
	// Gzip compresses the export requests.
	Gzip bool
	// JSON exports OTLP/JSON instead of protobuf.
	JSON bool
	// Spans, when > 0, makes every run exactly this many spans (e.g. 2000 for
	// a big run in the UI or a benchmark). 0 = natural runs of 10–60 spans.
	Spans int
}

// Run is one agent run: one trace, sent by one service.
type Run struct {
	TraceID trace.TraceID
	// Service is the resource's service.name.
	Service string
	// Resource holds the resource attributes (service.name,
	// deployment.environment.name, telemetry.sdk.*).
	Resource []attribute.KeyValue
	// Task is the task.name recorded on the root span.
	Task string
	// ConversationID is shared by the 2–4 runs of a conversation.
	ConversationID string
	// UserID is the user.id of the conversation.
	UserID string
	// Failed says whether the run ends in error.
	Failed bool
	// Incident is the safety incident the run carries (see
	// IncidentDuplicateSideEffect and the others), "" for none.
	Incident string
	// Trial is set on a run of the evaluation experiment (which has no
	// conversation or user), nil on the traffic's runs.
	Trial *Trial
	// Root is the root span with its descendants.
	Root SpanSpec
}

// SpanSpec is one span of a run and the spans below it.
type SpanSpec struct {
	SpanID        trace.SpanID
	Name          string
	Kind          trace.SpanKind
	Start, End    time.Time
	Attributes    []attribute.KeyValue
	Status        codes.Code
	StatusMessage string
	Events        []EventSpec
	// Children are ordered by start time.
	Children []SpanSpec
}

// EventSpec is a span event (e.g. "exception").
type EventSpec struct {
	Name       string
	Time       time.Time
	Attributes []attribute.KeyValue
}

// SpanCount is the number of spans in the run.
func (r Run) SpanCount() int { return r.Root.count() }

// Walk calls visit for every span of the run, parents before children, with
// the parent's span id (zero for the root).
func (r Run) Walk(visit func(parent trace.SpanID, s *SpanSpec)) {
	r.Root.walk(trace.SpanID{}, visit)
}

func (s *SpanSpec) count() int {
	n := 1
	for i := range s.Children {
		n += s.Children[i].count()
	}
	return n
}

func (s *SpanSpec) walk(parent trace.SpanID, visit func(trace.SpanID, *SpanSpec)) {
	visit(parent, s)
	for i := range s.Children {
		s.Children[i].walk(s.SpanID, visit)
	}
}

func (s *SpanSpec) shift(d time.Duration) {
	s.Start = s.Start.Add(d)
	s.End = s.End.Add(d)
	for i := range s.Events {
		s.Events[i].Time = s.Events[i].Time.Add(d)
	}
	for i := range s.Children {
		s.Children[i].shift(d)
	}
}
