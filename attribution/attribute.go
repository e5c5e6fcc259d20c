package attribution

import (
	"sort"

	"github.com/tallyhq/tally/schema"
)

// Span is the part of a span row that cost attribution reads.
type Span struct {
	Project      string
	TraceID      string
	SpanID       string
	ParentSpanID string
	StartNs      uint64
	EndNs        uint64
	Name         string
	Status       string
	Service      string
	SpanType     string
	Provider     string
	Model        string
	AgentName    string
	Conversation string
	User         string
	TaskName     string
	ToolName     string
	ToolCallID   string
	StepID       string
	Attempt      uint32
	Usage        Usage
	UsageMode    string
	Cost         Cost
	CostSource   string
	// Confidence is the span's cost confidence (schema.Confidence*).
	Confidence string
	// Record is true for a usage record (schema.Span.UsageRecord).
	Record  bool
	Version uint64
}

// Attributed is a span with the run-level facts cost attribution derives
// from its run.
type Attributed struct {
	*Span
	// Agent is the span's agent name, else the name of its nearest ancestor
	// that carries one.
	Agent string
	// Task is the run's task: task.name on any span of the run (the earliest
	// carrying it), else the root span's name, else the earliest span's name.
	Task string
	// Tool is the name of the nearest enclosing tool span (the span itself
	// when it is one); for an inference span that is retry tax between two
	// attempts of a tool call, that tool.
	Tool string
	// Conversation and User are the span's own, else the run's (the first
	// non-empty value in start order).
	Conversation string
	User         string
	// UsageCounted says the span's tokens count in totals, and CostCounted
	// its cost (the rule of counted.go, shared with the run summary of package query and the
	// run list).
	UsageCounted bool
	CostCounted  bool
	// RecordedCall is true for a usage record whose call is another span
	// of the run (RecordedCalls): its usage counts, but it is not a call.
	RecordedCall bool
	// ToolRetry and ToolError classify tool spans (see ClassifyRetries).
	ToolRetry bool
	ToolError bool
	// RetryTax says the span's cost is retry tax (see retrytax.go).
	RetryTax bool
}

// Attribute groups spans by run and derives each span's attribution. A span
// identity seen twice keeps its row with the highest version, the one FINAL
// would keep, so the spans may come from a read without FINAL. The result
// holds each run's spans together, in start order (ties broken by span id),
// runs in the order their first span appears in facts.
func Attribute(facts []Span) []Attributed {
	byRun := make(map[string][]*Span)
	var order []string
	for i := range facts {
		key := facts[i].Project + "\x00" + facts[i].TraceID
		if _, ok := byRun[key]; !ok {
			order = append(order, key)
		}
		byRun[key] = append(byRun[key], &facts[i])
	}
	out := make([]Attributed, 0, len(facts))
	for _, key := range order {
		out = append(out, AttributeRun(byRun[key])...)
	}
	return out
}

// AttributeRun attributes the spans of one run (it sorts spans in start
// order). A span id seen twice keeps its row with the highest version.
func AttributeRun(spans []*Span) []Attributed {
	sort.SliceStable(spans, func(i, j int) bool {
		if spans[i].StartNs != spans[j].StartNs {
			return spans[i].StartNs < spans[j].StartNs
		}
		return spans[i].SpanID < spans[j].SpanID
	})
	byID := make(map[string]int, len(spans))
	run := make([]Attributed, 0, len(spans))
	for _, s := range spans {
		if i, dup := byID[s.SpanID]; dup {
			if s.Version > run[i].Version {
				run[i].Span = s
			}
			continue
		}
		byID[s.SpanID] = len(run)
		run = append(run, Attributed{Span: s})
	}

	var task, rootName, conv, user string
	us := make([]UsageSpan, len(run))
	for i := range run {
		s := run[i].Span
		if task == "" && s.TaskName != "" {
			task = s.TaskName
		}
		if rootName == "" && s.ParentSpanID == "" {
			rootName = s.Name
		}
		if conv == "" {
			conv = s.Conversation
		}
		if user == "" {
			user = s.User
		}
		us[i] = UsageSpan{ID: s.SpanID, ParentID: s.ParentSpanID, SpanType: s.SpanType, UsageMode: s.UsageMode, Record: s.Record,
			StartNs: s.StartNs, EndNs: s.EndNs, Input: s.Usage.Input, CacheRead: s.Usage.CacheRead,
			CacheWrite: s.Usage.CacheWrite, Output: s.Usage.Output}
	}
	counted, _ := CountedUsage(us)
	recorded := RecordedCalls(us)
	if task == "" {
		task = rootName
	}
	if task == "" && len(run) > 0 {
		task = run[0].Name
	}

	agents := make([]string, len(run))
	tools := make([]string, len(run))
	resolved := make([]bool, len(run))
	// resolve walks up the parents of span i to the nearest span naming an
	// agent (and the nearest tool span), memoizing along the way; a parent
	// cycle stops the walk.
	var resolve func(i, depth int)
	resolve = func(i, depth int) {
		if resolved[i] {
			return
		}
		resolved[i] = true
		s := run[i].Span
		agents[i] = s.AgentName
		if s.SpanType == schema.TypeTool {
			tools[i] = s.ToolName
		}
		p, ok := byID[s.ParentSpanID]
		if !ok || depth > len(run) {
			return
		}
		resolve(p, depth+1)
		if agents[i] == "" {
			agents[i] = agents[p]
		}
		if s.SpanType != schema.TypeTool {
			tools[i] = tools[p]
		}
	}
	for i := range run {
		resolve(i, 0)
	}
	for i := range run {
		a := &run[i]
		a.Agent, a.Tool, a.Task = agents[i], tools[i], task
		a.Conversation, a.User = a.Span.Conversation, a.Span.User
		if a.Conversation == "" {
			a.Conversation = conv
		}
		if a.User == "" {
			a.User = user
		}
		a.UsageCounted = counted[i]
		a.CostCounted = CostCounts(counted[i], a.UsageMode)
		a.RecordedCall = recorded[i]
	}
	chargeRetryTax(run, byID)
	return run
}
