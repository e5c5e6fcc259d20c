package recording

import (
	"encoding/json"
	"fmt"
	"github.com/tallyhq/tally/replay"
	"sort"
	"time"

	"github.com/tallyhq/tally/schema"
	"github.com/tallyhq/tally/support/canonical"
)

// BuildOption changes what Build puts in a fixture.
type BuildOption func(*buildConfig)

type buildConfig struct {
	inferences bool
	redact     func(key string, value []byte) []byte
}

// WithInferences adds the run's inference spans (model, provider, usage,
// output) to the fixture, for agents that replay the model too.
func WithInferences() BuildOption {
	return func(c *buildConfig) { c.inferences = true }
}

// WithRedact passes every content value through redact before it enters the
// fixture. key is the attribute the value came from (the content row's
// SourceKey, else its Kind). Redaction normally happens at ingest; this is
// for exports that need more. Argument hashes are not recomputed: a player
// still matches the arguments the agent really sends.
func WithRedact(redact func(key string, value []byte) []byte) BuildOption {
	return func(c *buildConfig) { c.redact = redact }
}

// Build turns one run's span and content rows into a fixture. Rows may come in
// any order and may repeat (a span delivered twice appears once). Calls are
// ordered by start time, then span id. Empty fields of run are filled from the
// spans: trace id, start (earliest span), agent, conversation and service
// (first span in order that carries one) and task (task.name on any span,
// else the root span's name). A call whose arguments or result content is
// absent is listed in Missing, never given an empty value (a call that ended
// in error needs no result); a content row with an empty value counts as
// absent.
func Build(run replay.RunInfo, spans []schema.Span, contents []schema.Content, opts ...BuildOption) (*replay.Fixture, error) {
	var cfg buildConfig
	for _, opt := range opts {
		opt(&cfg)
	}
	ordered, err := orderSpans(run.TraceID, spans)
	if err != nil {
		return nil, err
	}
	fillRunInfo(&run, ordered)
	byPart, err := indexContents(run.TraceID, contents)
	if err != nil {
		return nil, err
	}

	f := &replay.Fixture{
		Format:  replay.FormatV1,
		Run:     run,
		Calls:   []replay.Call{},
		Missing: replay.MissingSummary{Arguments: []int{}, Results: []int{}},
	}
	for _, s := range ordered {
		switch {
		case s.SpanType == schema.TypeTool:
			c := buildCall(len(f.Calls)+1, s, byPart, cfg.redact)
			for _, part := range c.Missing {
				switch part {
				case replay.PartArguments:
					f.Missing.Arguments = append(f.Missing.Arguments, c.Seq)
				case replay.PartResult:
					f.Missing.Results = append(f.Missing.Results, c.Seq)
				}
			}
			f.Calls = append(f.Calls, c)
		case s.SpanType == schema.TypeInference && cfg.inferences:
			f.Inferences = append(f.Inferences, buildInference(len(f.Inferences)+1, s, byPart, cfg.redact))
		}
	}
	return f, nil
}

// orderSpans sorts spans by start then span id, drops repeated deliveries and
// checks that they all belong to one trace.
func orderSpans(traceID string, spans []schema.Span) ([]schema.Span, error) {
	ordered := make([]schema.Span, len(spans))
	copy(ordered, spans)
	sort.SliceStable(ordered, func(i, j int) bool {
		if ordered[i].StartNs != ordered[j].StartNs {
			return ordered[i].StartNs < ordered[j].StartNs
		}
		return ordered[i].SpanID < ordered[j].SpanID
	})
	seen := make(map[string]bool, len(ordered))
	out := ordered[:0]
	for _, s := range ordered {
		if traceID == "" {
			traceID = s.TraceID
		}
		if s.TraceID != traceID {
			return nil, fmt.Errorf("replay: build fixture: span %s belongs to trace %s, not %s", s.SpanID, s.TraceID, traceID)
		}
		if seen[s.SpanID] {
			continue
		}
		seen[s.SpanID] = true
		out = append(out, s)
	}
	return out, nil
}

// fillRunInfo fills the empty fields of run from the ordered spans.
func fillRunInfo(run *replay.RunInfo, spans []schema.Span) {
	if len(spans) == 0 {
		return
	}
	if run.TraceID == "" {
		run.TraceID = spans[0].TraceID
	}
	if run.StartedAt == "" {
		run.StartedAt = formatNs(spans[0].StartNs)
	}
	firstOf := func(field func(schema.Span) string) string {
		for _, s := range spans {
			if v := field(s); v != "" {
				return v
			}
		}
		return ""
	}
	if run.Agent == "" {
		run.Agent = firstOf(func(s schema.Span) string { return s.AgentName })
	}
	if run.ConversationID == "" {
		run.ConversationID = firstOf(func(s schema.Span) string { return s.ConversationID })
	}
	if run.Service == "" {
		run.Service = firstOf(func(s schema.Span) string { return s.Service })
	}
	if run.Task == "" {
		run.Task = firstOf(func(s schema.Span) string { return s.TaskName })
	}
	if run.Task == "" {
		run.Task = firstOf(func(s schema.Span) string {
			if s.ParentSpanID == "" {
				return s.Name
			}
			return ""
		})
	}
}

type partKey struct {
	spanID string
	kind   string
}

// indexContents picks one content row per (span, kind). When several rows
// share a key (an attribute and its alias), the lowest source key wins, so
// the choice does not depend on row order.
func indexContents(traceID string, contents []schema.Content) (map[partKey]schema.Content, error) {
	byPart := make(map[partKey]schema.Content, len(contents))
	for _, c := range contents {
		if traceID != "" && c.TraceID != traceID {
			return nil, fmt.Errorf("replay: build fixture: content of span %s belongs to trace %s, not %s", c.SpanID, c.TraceID, traceID)
		}
		k := partKey{c.SpanID, c.Kind}
		prev, ok := byPart[k]
		if !ok || c.SourceKey < prev.SourceKey || (c.SourceKey == prev.SourceKey && c.Value < prev.Value) {
			byPart[k] = c
		}
	}
	return byPart, nil
}

// contentValue is one recorded part as it goes into a fixture.
type contentValue struct {
	json      json.RawMessage // canonical JSON when the value parsed
	text      string          // the value as-is otherwise
	missing   bool
	truncated bool
}

func readPart(byPart map[partKey]schema.Content, spanID, kind string, redact func(string, []byte) []byte) contentValue {
	c, ok := byPart[partKey{spanID, kind}]
	if !ok || c.Value == "" {
		return contentValue{missing: true}
	}
	value := []byte(c.Value)
	if redact != nil {
		key := c.SourceKey
		if key == "" {
			key = c.Kind
		}
		value = redact(key, value)
	}
	if c.Truncated != 0 {
		return contentValue{text: string(value), truncated: true}
	}
	if canon, err := canonical.JSON(value); err == nil {
		return contentValue{json: canon}
	}
	return contentValue{text: string(value)}
}

func buildCall(seq int, s schema.Span, byPart map[partKey]schema.Content, redact func(string, []byte) []byte) replay.Call {
	c := replay.Call{
		Seq:          seq,
		SpanID:       s.SpanID,
		ParentSpanID: s.ParentSpanID,
		StartedAt:    formatNs(s.StartNs),
		Tool:         s.ToolName,
		ToolCallID:   s.ToolCallID,
		ArgsHash:     s.ArgsHash,
		Error:        spanError(s),
		Status:       spanStatus(s),
		Attempt:      int(s.Attempt),
		DurationMs:   durationMs(s),
	}
	if c.Tool == "" {
		c.Tool = s.Name
	}
	args := readPart(byPart, s.SpanID, schema.ContentToolArguments, nil)
	if c.ArgsHash == "" && !args.missing {
		// Hash what was recorded, before any export-time redaction.
		if args.json != nil {
			c.ArgsHash = canonical.Hash(string(args.json))
		} else {
			c.ArgsHash = canonical.Hash(args.text)
		}
	}
	if redact != nil {
		args = readPart(byPart, s.SpanID, schema.ContentToolArguments, redact)
	}
	c.Arguments, c.ArgumentsText = args.json, args.text
	c.Missing, c.Truncated = notePart(c.Missing, c.Truncated, replay.PartArguments, args)

	result := readPart(byPart, s.SpanID, schema.ContentToolResult, redact)
	if result.missing && c.Error != nil {
		// A failed call answers with its error; no result is expected.
		result.missing = false
	}
	c.Result, c.ResultText = result.json, result.text
	c.Missing, c.Truncated = notePart(c.Missing, c.Truncated, replay.PartResult, result)
	return c
}

func buildInference(seq int, s schema.Span, byPart map[partKey]schema.Content, redact func(string, []byte) []byte) replay.Inference {
	in := replay.Inference{
		Seq:          seq,
		SpanID:       s.SpanID,
		ParentSpanID: s.ParentSpanID,
		StartedAt:    formatNs(s.StartNs),
		Operation:    s.Operation,
		Provider:     s.Provider,
		Model:        s.Model,
		Usage: replay.Usage{
			InputTokens:      s.InputTokens,
			CacheReadTokens:  s.CacheReadTokens,
			CacheWriteTokens: s.CacheWriteTokens,
			OutputTokens:     s.OutputTokens,
			ReasoningTokens:  s.ReasoningTokens,
		},
		Error:      spanError(s),
		Status:     spanStatus(s),
		DurationMs: durationMs(s),
	}
	if len(s.FinishReasons) > 0 {
		in.FinishReasons = append([]string(nil), s.FinishReasons...)
	}
	out := readPart(byPart, s.SpanID, schema.ContentOutputMessages, redact)
	in.Output, in.OutputText = out.json, out.text
	in.Missing, in.Truncated = notePart(in.Missing, in.Truncated, replay.PartOutput, out)
	return in
}

func notePart(missing, truncated []string, part string, v contentValue) ([]string, []string) {
	if v.missing {
		missing = append(missing, part)
	}
	if v.truncated {
		truncated = append(truncated, part)
	}
	return missing, truncated
}

// spanStatus is the span's status, "unset" when ingest left it empty.
func spanStatus(s schema.Span) string {
	if s.Status == "" {
		return "unset"
	}
	return s.Status
}

// spanError is the recorded error of a span that ended in error, else nil.
func spanError(s schema.Span) *replay.CallError {
	if s.Status != schema.StatusError && s.ErrorType == "" {
		return nil
	}
	e := &replay.CallError{Type: s.ErrorType, Message: s.StatusMessage}
	if e.Type == "" {
		e.Type = "_OTHER"
	}
	return e
}

func durationMs(s schema.Span) float64 {
	ns := s.DurationNs
	if ns == 0 && s.EndNs > s.StartNs {
		ns = s.EndNs - s.StartNs
	}
	return float64(ns) / 1e6
}

// formatNs formats unix nanoseconds as RFC 3339 with nanoseconds in UTC.
func formatNs(ns uint64) string {
	return time.Unix(0, int64(ns)).UTC().Format(time.RFC3339Nano)
}
