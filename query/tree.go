package query

import (
	"sort"
	"time"

	"github.com/tallyhq/tally/attribution"
	"github.com/tallyhq/tally/safety"
	"github.com/tallyhq/tally/schema"
)

// Event is a span event.
type Event struct {
	Name       string         `json:"name"`
	Time       time.Time      `json:"time"`
	Attributes map[string]any `json:"attributes,omitempty"`
}

// SpanNode is one span in a run tree, with its children ordered by start.
type SpanNode struct {
	SpanID        string             `json:"span_id"`
	ParentSpanID  string             `json:"parent_span_id,omitempty"`
	Name          string             `json:"name"`
	Type          string             `json:"type"`
	Operation     string             `json:"operation,omitempty"`
	Kind          string             `json:"kind"`
	Status        string             `json:"status"`
	StatusMessage string             `json:"status_message,omitempty"`
	Service       string             `json:"service,omitempty"`
	Start         time.Time          `json:"start"`
	End           time.Time          `json:"end"`
	DurationMs    float64            `json:"duration_ms"`
	Depth         int                `json:"depth"`
	Orphan        bool               `json:"orphan,omitempty"` // parent never arrived; shown as an extra root
	Provider      string             `json:"provider,omitempty"`
	Model         string             `json:"model,omitempty"`
	RequestModel  string             `json:"request_model,omitempty"`
	AgentName     string             `json:"agent_name,omitempty"`
	ToolName      string             `json:"tool_name,omitempty"`
	ToolCallID    string             `json:"tool_call_id,omitempty"`
	Attempt       uint32             `json:"attempt,omitempty"`
	ErrorType     string             `json:"error_type,omitempty"`
	FinishReasons []string           `json:"finish_reasons,omitempty"`
	TTFCMs        float64            `json:"time_to_first_chunk_ms,omitempty"`
	Usage         *attribution.Usage `json:"usage,omitempty"`
	UsageMode     string             `json:"usage_mode,omitempty"`
	Unreconciled  bool               `json:"usage_unreconciled,omitempty"`
	Cost          *attribution.Cost  `json:"cost,omitempty"`
	CostSource    string             `json:"cost_source,omitempty"`
	// CostConfidence says how sure the span's cost is (schema.Confidence*);
	// the rule that rated it is its tally.cost.confidence_rule attribute.
	CostConfidence string `json:"cost_confidence,omitempty"`
	// UsageRecord is true for a span that records another span's call
	// (schema.Span.UsageRecord): its usage counts, it is not a call.
	UsageRecord bool `json:"usage_record,omitempty"`
	// Counted says the span's usage and cost count in the run's totals
	// (attribution.CountedUsage: a wrapper of the same call, or an agent span repeating
	// its children's usage, does not).
	Counted      bool              `json:"counted"`
	PriceEntry   string            `json:"price_entry,omitempty"`
	PriceVersion string            `json:"price_version,omitempty"`
	ArgsHash     string            `json:"args_hash,omitempty"`
	RetryClass   attribution.Class `json:"retry_class,omitempty"` // tool spans: original, retry_*, repeat (docs/design.md's rules)
	// Effect and StepStatus are a tool span's effect class and terminal
	// status (package safety).
	Effect     safety.Effect `json:"effect,omitempty"`
	StepStatus safety.Status `json:"step_status,omitempty"`
	// SubtreeUsage and SubtreeCost are the span's inclusive figures: what
	// counts in the run's totals from this span and everything below it
	// (a wrapper repeating its child's call adds nothing), so a root's
	// subtree cost is the run's cost. Absent when the subtree has none.
	SubtreeUsage *attribution.Usage `json:"subtree_usage,omitempty"`
	SubtreeCost  *attribution.Cost  `json:"subtree_cost,omitempty"`
	Attributes   Pairs              `json:"attributes,omitempty"`
	Resource     Pairs              `json:"resource,omitempty"`
	Events       []Event            `json:"events,omitempty"`
	Children     []*SpanNode        `json:"children"`
	// HiddenChildren and HiddenSpans are set on a node of a run answered in
	// part (RunTree, Children): how many of its direct children, and how
	// many spans below it at any depth, the answer leaves out. Fetch them
	// with Reader.Children (GET …/spans/{span_id}/children).
	HiddenChildren int    `json:"hidden_children,omitempty"`
	HiddenSpans    int    `json:"hidden_spans,omitempty"`
	ConversationID string `json:"-"`
	UserID         string `json:"-"`
	TaskName       string `json:"-"`
}

func nsTime(ns uint64) time.Time { return time.Unix(0, int64(ns)).UTC() }

func newNode(s *schema.Span) *SpanNode {
	n := &SpanNode{Children: []*SpanNode{}}
	n.setSpan(s)
	return n
}

// setSpan sets every field of the node that is the span's own (all but the
// children and the figures of the run around it) from s: a node of a big
// run's part, built from the run's outline or settled tree, gets them again
// from its whole row (fillRows).
func (n *SpanNode) setSpan(s *schema.Span) {
	n.SpanID, n.ParentSpanID, n.Name, n.Type = s.SpanID, s.ParentSpanID, s.Name, s.SpanType
	n.Operation, n.Status, n.StatusMessage, n.Service = s.Operation, s.Status, s.StatusMessage, s.Service
	n.Start, n.End, n.DurationMs = nsTime(s.StartNs), nsTime(s.EndNs), float64(s.DurationNs)/1e6
	n.Provider, n.Model, n.AgentName, n.ToolName = s.Provider, s.Model, s.AgentName, s.ToolName
	n.ToolCallID, n.Attempt, n.ErrorType, n.UsageMode = s.ToolCallID, s.Attempt, s.ErrorType, s.UsageMode
	n.Unreconciled, n.CostSource, n.CostConfidence = s.UsageUnreconciled == 1, s.CostSource, s.CostConfidence
	n.UsageRecord, n.ArgsHash = s.UsageRecord == 1, s.ArgsHash
	n.ConversationID, n.UserID, n.TaskName = s.ConversationID, s.UserID, s.TaskName
	n.Kind, n.RequestModel, n.FinishReasons, n.TTFCMs = s.Kind, s.RequestModel, s.FinishReasons, s.TTFCMs
	n.PriceEntry, n.PriceVersion = s.PriceEntry, s.PriceVersion
	n.Attributes, n.Resource = pairs(s.AttrKeys, s.AttrValues), pairs(s.ResourceKeys, s.ResourceValues)
	n.Events = nil
	for i, name := range s.EventNames {
		e := Event{Name: name}
		if i < len(s.EventTimeNs) {
			e.Time = nsTime(s.EventTimeNs[i])
		}
		if i < len(s.EventAttrs) {
			e.Attributes = decodeObject(s.EventAttrs[i])
		}
		n.Events = append(n.Events, e)
	}
	n.Usage, n.Cost = nil, nil
	u := attribution.Usage{Input: s.InputTokens, CacheRead: s.CacheReadTokens, CacheWrite: s.CacheWriteTokens,
		Output: s.OutputTokens, Reasoning: s.ReasoningTokens}
	if !u.IsZero() {
		n.Usage = &u
	}
	if s.CostSource != schema.CostNone {
		n.Cost = &attribution.Cost{Total: s.CostTotal, Input: s.CostInput, CacheRead: s.CostCacheRead,
			CacheWrite: s.CostCacheWrite, Output: s.CostOutput}
	}
}

// nodesByID indexes every node of the trees under roots by span id.
func nodesByID(roots []*SpanNode) map[string]*SpanNode {
	byID := map[string]*SpanNode{}
	stack := append([]*SpanNode(nil), roots...)
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		byID[n.SpanID] = n
		stack = append(stack, n.Children...)
	}
	return byID
}

// sumSubtrees sets every node's SubtreeUsage and SubtreeCost from the
// Counted flags: usage of counted spans, cost of spans whose cost counts
// (attribution.CostCounts). Children are summed before their parents, by
// walking a breadth-first order backwards, so deep runs need no recursion.
func sumSubtrees(roots []*SpanNode) {
	// order is breadth-first, so a node's children are contiguous in it,
	// from kids[i] on: the sums are kept by position, not in a map.
	order := append([]*SpanNode(nil), roots...)
	kids := make([]int, 0, len(order))
	for i := 0; i < len(order); i++ {
		kids = append(kids, len(order))
		order = append(order, order[i].Children...)
	}
	type sums struct {
		usage  attribution.Usage
		cost   attribution.Cost
		priced bool
	}
	acc := make([]sums, len(order))
	for i := len(order) - 1; i >= 0; i-- {
		n, s := order[i], &acc[i]
		if n.Counted && n.Usage != nil {
			s.usage.Add(*n.Usage)
		}
		if n.Cost != nil && attribution.CostCounts(n.Counted, n.UsageMode) {
			s.cost.Add(*n.Cost)
			s.priced = true
		}
		for k := range n.Children {
			cs := &acc[kids[i]+k]
			s.usage.Add(cs.usage)
			s.cost.Add(cs.cost)
			s.priced = s.priced || cs.priced
		}
		if !s.usage.IsZero() {
			u := s.usage
			n.SubtreeUsage = &u
		}
		if s.priced {
			c := s.cost
			n.SubtreeCost = &c
		}
	}
}

// BuildTree nests a run's spans by parent. Children are ordered by start time
// (then span id). A span whose parent never arrived becomes an extra root,
// flagged Orphan; several roots are allowed. A duplicate span id keeps its
// first occurrence. Spans caught in a parent cycle are broken out as orphan
// roots, so every span appears exactly once.
func BuildTree(spans []schema.Span) []*SpanNode {
	nodes := make(map[string]*SpanNode, len(spans))
	order := make([]*SpanNode, 0, len(spans))
	for i := range spans {
		if _, dup := nodes[spans[i].SpanID]; dup {
			continue
		}
		n := newNode(&spans[i])
		nodes[n.SpanID] = n
		order = append(order, n)
	}
	byStart := func(list []*SpanNode) {
		sort.SliceStable(list, func(i, j int) bool {
			if !list[i].Start.Equal(list[j].Start) {
				return list[i].Start.Before(list[j].Start)
			}
			return list[i].SpanID < list[j].SpanID
		})
	}
	byStart(order)
	var roots []*SpanNode
	for _, n := range order {
		p, ok := nodes[n.ParentSpanID]
		switch {
		case n.ParentSpanID == "":
			roots = append(roots, n)
		case !ok || p == n:
			n.Orphan = true
			roots = append(roots, n)
		default:
			p.Children = append(p.Children, n)
		}
	}
	// Assign depths breadth-first from the roots; whatever is not reached
	// sits in a cycle: cut it loose at its earliest span.
	seen := make(map[*SpanNode]bool, len(order))
	var walk func(rs []*SpanNode)
	walk = func(rs []*SpanNode) {
		queue := append([]*SpanNode(nil), rs...)
		for len(queue) > 0 {
			n := queue[0]
			queue = queue[1:]
			seen[n] = true
			for _, c := range n.Children {
				c.Depth = n.Depth + 1
				queue = append(queue, c)
			}
		}
	}
	walk(roots)
	for _, n := range order {
		if seen[n] {
			continue
		}
		// n is in (or below) a cycle: detach it from its parent and make it a root.
		if p := nodes[n.ParentSpanID]; p != nil {
			kept := p.Children[:0]
			for _, c := range p.Children {
				if c != n {
					kept = append(kept, c)
				}
			}
			p.Children = kept
		}
		n.Orphan = true
		n.Depth = 0
		roots = append(roots, n)
		walk([]*SpanNode{n})
	}
	byStart(roots)
	return roots
}
