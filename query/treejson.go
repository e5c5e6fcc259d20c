package query

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/tallyhq/tally/attribution"
	"github.com/tallyhq/tally/support/canonical"
)

// A run tree is most of what GET /runs/{id} writes: for a 5,000-span run,
// encoding/json spent half the answer's time on it, reflecting over some
// forty fields a node and then re-scanning every custom field's output
// (Pairs, Cost) to compact it. AppendJSON writes the same JSON in one pass.
// It is the encoding/json encoding of the same values (fields in
// declaration order, omitempty honored, floats and times formatted alike),
// except that strings are not HTML-escaped (the API answers JSON, never
// HTML); TestTreeJSONMatchesEncodingJSON holds the two equal.

// AppendJSON appends the run detail as JSON to b.
func (d *RunDetail) AppendJSON(b []byte) ([]byte, error) {
	summary, err := json.Marshal(d.Summary)
	if err != nil {
		return b, err
	}
	b = slices.Grow(b, len(summary)+nodesSize(d.Roots)+1024)
	b = append(b, `{"summary":`...)
	b = append(b, summary...)
	b = append(b, `,"roots":`...)
	b = appendNodes(b, d.Roots)
	return appendRest(b, d)
}

// appendRest appends the detail's fields after roots, as encoding/json
// would (the tags of RunDetail), and closes the object.
func appendRest(b []byte, d *RunDetail) ([]byte, error) {
	type tail struct {
		Truncated        *Truncation `json:"truncated,omitempty"`
		Partial          *Partial    `json:"partial,omitempty"`
		CostliestSpanID  string      `json:"costliest_span_id,omitempty"`
		CostConfidence   any         `json:"cost_confidence_rules,omitempty"`
		FirstErrorSpanID string      `json:"first_error_span_id,omitempty"`
	}
	t := tail{Truncated: d.Truncated, Partial: d.Partial, CostliestSpanID: d.CostliestSpanID, FirstErrorSpanID: d.FirstErrorSpanID}
	if len(d.CostConfidence) > 0 {
		t.CostConfidence = d.CostConfidence
	}
	rest, err := json.Marshal(t)
	if err != nil {
		return b, err
	}
	if len(rest) > 2 { // more than {}
		b = append(b, ',')
		b = append(b, rest[1:len(rest)-1]...)
	}
	return append(b, '}'), nil
}

// nodesSize is about the bytes of nodes and their subtrees as JSON, so
// that the answer is written into one buffer instead of one that grows
// (and is copied) a dozen times: a node's fixed members with the usual
// lengths of ids, names and times, plus its attributes and resource.
func nodesSize(nodes []*SpanNode) int {
	n := 0
	stack := slices.Clone(nodes)
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if x == nil {
			continue
		}
		n += 900 + len(x.Name) + len(x.StatusMessage) + 64*len(x.Events)
		for _, p := range [2]Pairs{x.Attributes, x.Resource} {
			for _, kv := range p {
				n += len(kv.Key) + len(kv.Value) + 8
			}
		}
		stack = append(stack, x.Children...)
	}
	return n
}

// appendNodes appends nodes as a JSON array (null for a nil slice).
func appendNodes(b []byte, nodes []*SpanNode) []byte {
	if nodes == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, n := range nodes {
		if i > 0 {
			b = append(b, ',')
		}
		b = n.appendJSON(b)
	}
	return append(b, ']')
}

// appendJSON appends the node, its subtree included.
func (n *SpanNode) appendJSON(b []byte) []byte {
	if n == nil {
		return append(b, "null"...)
	}
	w := jsonObject{b: append(b, '{')}
	w.str("span_id", n.SpanID, false)
	w.str("parent_span_id", n.ParentSpanID, true)
	w.str("name", n.Name, false)
	w.str("type", n.Type, false)
	w.str("operation", n.Operation, true)
	w.str("kind", n.Kind, false)
	w.str("status", n.Status, false)
	w.str("status_message", n.StatusMessage, true)
	w.str("service", n.Service, true)
	w.time("start", n.Start)
	w.time("end", n.End)
	w.float("duration_ms", n.DurationMs, false)
	w.int("depth", int64(n.Depth), false)
	w.bool("orphan", n.Orphan, true)
	w.str("provider", n.Provider, true)
	w.str("model", n.Model, true)
	w.str("request_model", n.RequestModel, true)
	w.str("agent_name", n.AgentName, true)
	w.str("tool_name", n.ToolName, true)
	w.str("tool_call_id", n.ToolCallID, true)
	w.int("attempt", int64(n.Attempt), true)
	w.str("error_type", n.ErrorType, true)
	if len(n.FinishReasons) > 0 {
		w.key("finish_reasons")
		w.b = append(w.b, '[')
		for i, r := range n.FinishReasons {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.b = canonical.AppendString(w.b, r)
		}
		w.b = append(w.b, ']')
	}
	w.float("time_to_first_chunk_ms", n.TTFCMs, true)
	w.usage("usage", n.Usage)
	w.str("usage_mode", n.UsageMode, true)
	w.bool("usage_unreconciled", n.Unreconciled, true)
	w.cost("cost", n.Cost)
	w.str("cost_source", n.CostSource, true)
	w.str("cost_confidence", n.CostConfidence, true)
	w.bool("usage_record", n.UsageRecord, true)
	w.bool("counted", n.Counted, false)
	w.str("price_entry", n.PriceEntry, true)
	w.str("price_version", n.PriceVersion, true)
	w.str("args_hash", n.ArgsHash, true)
	w.str("retry_class", string(n.RetryClass), true)
	w.str("effect", string(n.Effect), true)
	w.str("step_status", string(n.StepStatus), true)
	w.usage("subtree_usage", n.SubtreeUsage)
	w.cost("subtree_cost", n.SubtreeCost)
	if len(n.Attributes) > 0 {
		w.key("attributes")
		w.b = n.Attributes.appendJSON(w.b)
	}
	if len(n.Resource) > 0 {
		w.key("resource")
		w.b = n.Resource.appendJSON(w.b)
	}
	if len(n.Events) > 0 {
		if ev, err := json.Marshal(n.Events); err == nil {
			w.key("events")
			w.b = append(w.b, ev...)
		}
	}
	w.key("children")
	w.b = appendNodes(w.b, n.Children)
	w.int("hidden_children", int64(n.HiddenChildren), true)
	w.int("hidden_spans", int64(n.HiddenSpans), true)
	return append(w.b, '}')
}

// jsonObject writes the members of a JSON object whose '{' is written.
type jsonObject struct {
	b    []byte
	more bool // a member is written: the next needs a comma
}

func (w *jsonObject) key(k string) {
	if w.more {
		w.b = append(w.b, ',')
	}
	w.more = true
	w.b = append(w.b, '"')
	w.b = append(w.b, k...)
	w.b = append(w.b, '"', ':')
}

func (w *jsonObject) str(k, v string, omitEmpty bool) {
	if omitEmpty && v == "" {
		return
	}
	w.key(k)
	w.b = canonical.AppendString(w.b, v)
}

func (w *jsonObject) int(k string, v int64, omitEmpty bool) {
	if omitEmpty && v == 0 {
		return
	}
	w.key(k)
	w.b = strconv.AppendInt(w.b, v, 10)
}

func (w *jsonObject) uint(k string, v uint64) {
	w.key(k)
	w.b = strconv.AppendUint(w.b, v, 10)
}

func (w *jsonObject) bool(k string, v, omitEmpty bool) {
	if omitEmpty && !v {
		return
	}
	w.key(k)
	w.b = strconv.AppendBool(w.b, v)
}

func (w *jsonObject) float(k string, v float64, omitEmpty bool) {
	if omitEmpty && v == 0 {
		return
	}
	w.key(k)
	w.b = appendFloat(w.b, v)
}

// time writes t as time.Time's MarshalJSON does (RFC 3339 with
// nanoseconds, trailing zeros dropped).
func (w *jsonObject) time(k string, t time.Time) {
	w.key(k)
	w.b = append(w.b, '"')
	w.b = t.AppendFormat(w.b, time.RFC3339Nano)
	w.b = append(w.b, '"')
}

func (w *jsonObject) usage(k string, u *attribution.Usage) {
	if u == nil {
		return
	}
	w.key(k)
	o := jsonObject{b: append(w.b, '{')}
	o.uint("input_tokens", u.Input)
	o.uint("cache_read_tokens", u.CacheRead)
	o.uint("cache_write_tokens", u.CacheWrite)
	o.uint("output_tokens", u.Output)
	o.uint("reasoning_tokens", u.Reasoning)
	w.b = append(o.b, '}')
}

// cost writes c as attribution.Cost's MarshalJSON does (each amount
// rounded to 1e-10 USD).
func (w *jsonObject) cost(k string, c *attribution.Cost) {
	if c == nil {
		return
	}
	w.key(k)
	o := jsonObject{b: append(w.b, '{')}
	o.float("total_usd", attribution.RoundUSD(c.Total), false)
	o.float("input_usd", attribution.RoundUSD(c.Input), false)
	o.float("cache_read_usd", attribution.RoundUSD(c.CacheRead), false)
	o.float("cache_write_usd", attribution.RoundUSD(c.CacheWrite), false)
	o.float("output_usd", attribution.RoundUSD(c.Output), false)
	w.b = append(o.b, '}')
}

// appendFloat formats f as encoding/json does: the shortest decimal that
// reads back as f, in exponent form below 1e-6 and from 1e21 on (with a
// one-digit negative exponent written e-7, not e-07).
func appendFloat(b []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// AppendJSON appends the page of children as JSON to b.
func (p *ChildrenPart) AppendJSON(b []byte) ([]byte, error) {
	w := jsonObject{b: append(slices.Grow(b, nodesSize(p.Children)+256), '{')}
	w.str("trace_id", p.TraceID, false)
	w.str("span_id", p.SpanID, false)
	w.int("children_total", int64(p.ChildrenTotal), false)
	w.int("offset", int64(p.Offset), false)
	w.key("next_offset")
	if p.NextOffset == nil {
		w.b = append(w.b, "null"...)
	} else {
		w.b = strconv.AppendInt(w.b, int64(*p.NextOffset), 10)
	}
	w.key("children")
	w.b = appendNodes(w.b, p.Children)
	if p.Truncated != nil {
		t, err := json.Marshal(p.Truncated)
		if err != nil {
			return b, err
		}
		w.key("truncated")
		w.b = append(w.b, t...)
	}
	return append(w.b, '}'), nil
}
