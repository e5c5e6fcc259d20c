package query

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/tallyhq/tally/schema"
)

// Outcome is one verdict on a run or one of its spans: posted to the API
// (an evaluator, a reviewer: Origin "api") or carried by the spans as the
// GenAI semantic conventions' evaluation result (Origin "event": a
// gen_ai.evaluation.result event; "attribute": gen_ai.evaluation.*
// attributes on the span itself).
type Outcome struct {
	TraceID     string    `json:"trace_id"`
	SpanID      string    `json:"span_id,omitempty"`
	Name        string    `json:"name"`
	Source      string    `json:"source,omitempty"`
	Score       *float64  `json:"score,omitempty"`
	Label       string    `json:"label,omitempty"`
	Passed      *bool     `json:"passed,omitempty"`
	Explanation string    `json:"explanation,omitempty"`
	Origin      string    `json:"origin"`
	CreatedAt   time.Time `json:"created_at,omitzero"`
}

// The evaluation result of the GenAI semantic conventions: an event on the
// evaluated span (or these attributes on a span of its own).
const (
	EvaluationEvent       = "gen_ai.evaluation.result"
	EvaluationName        = "gen_ai.evaluation.name"
	EvaluationScore       = "gen_ai.evaluation.score.value"
	EvaluationLabel       = "gen_ai.evaluation.score.label"
	EvaluationExplanation = "gen_ai.evaluation.explanation"
	// EvaluationPassed is tally's own: a boolean verdict an instrumentation
	// may set beside the semantic conventions' score and label.
	EvaluationPassed = "gen_ai.evaluation.passed"
)

// VerdictOfLabel reads a pass/fail verdict from a label: pass, passed,
// success, correct, true, yes (and their opposites); anything else has no
// verdict.
func VerdictOfLabel(label string) *bool {
	switch strings.ToLower(strings.TrimSpace(label)) {
	case "pass", "passed", "success", "succeeded", "correct", "true", "yes", "ok":
		t := true
		return &t
	case "fail", "failed", "failure", "incorrect", "false", "no", "error":
		f := false
		return &f
	}
	return nil
}

// outcomeChunk is how many runs one outcome read names (see wideChunk).
const outcomeChunk = 1000

// traceSet is the IN set of trace ids, or of span ids (lowercased, as
// stored).
func traceSet(ids []string) clickhouse.GroupSet {
	set := clickhouse.GroupSet{Value: make([]any, len(ids))}
	for i, id := range ids {
		set.Value[i] = strings.ToLower(id)
	}
	return set
}

// Outcomes reads the outcomes of runs, by trace id: those posted (the
// latest post of each) and those their spans carry. lo and hi bound when
// the runs' spans start (from the first run's start to the last one's
// end), for partition pruning.
func (r OutcomeReader) Outcomes(ctx context.Context, project string, traceIDs []string, lo, hi time.Time) (map[string][]Outcome, error) {
	return r.outcomes(ctx, project, traceIDs, lo, hi)
}

// outcomes is Outcomes, for the reports built on outcomes (tasks).
func (r *core) outcomes(ctx context.Context, project string, traceIDs []string, lo, hi time.Time) (map[string][]Outcome, error) {
	out := map[string][]Outcome{}
	for len(traceIDs) > 0 {
		chunk := traceIDs[:min(outcomeChunk, len(traceIDs))]
		traceIDs = traceIDs[len(chunk):]
		set := traceSet(chunk)
		if err := r.postedOutcomes(ctx, project, set, lo, hi, out); err != nil {
			return nil, err
		}
		if err := r.spanOutcomes(ctx, project, set, lo, hi, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// postedOutcomes adds the posted outcomes of a set of runs to out.
func (r *core) postedOutcomes(ctx context.Context, project string, set clickhouse.GroupSet, lo, hi time.Time, out map[string][]Outcome) error {
	// run_start (the partition key) is the run's first start when the
	// outcome was posted: within [lo, hi]. A later span can move a run's
	// start, so a replacement may sit in another partition than what it
	// replaces: the latest version per identity is picked here (latestOf),
	// not left to FINAL (which the embedded store runs partition by
	// partition).
	q, args := postedOutcomesSQL(r.store, project, set, lo, hi)
	return r.scanPosted(ctx, q, args, out)
}

// scanPosted runs a read of posted outcomes (postedOutcomesSQL's columns)
// and adds them to out.
func (r *core) scanPosted(ctx context.Context, q string, args []any, out map[string][]Outcome) error {
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("read outcomes: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var o Outcome
		var score float64
		var hasScore uint8
		var passed int8
		if err := rows.Scan(&o.TraceID, &o.SpanID, &o.Name, &o.Source, &score, &hasScore, &o.Label, &passed, &o.Explanation, &o.CreatedAt); err != nil {
			return fmt.Errorf("read outcomes: %w", err)
		}
		if hasScore == 1 {
			o.Score = &score
		}
		if passed != schema.VerdictNone {
			v := passed == schema.VerdictPassed
			o.Passed = &v
		}
		o.Origin, o.CreatedAt = "api", o.CreatedAt.UTC()
		out[o.TraceID] = append(out[o.TraceID], o)
	}
	return rows.Err()
}

// postedOutcomesSQL builds postedOutcomes' statement: the latest post of
// each outcome of the runs in set, whose runs start in [lo, hi].
func postedOutcomesSQL(t tables, project string, set clickhouse.GroupSet, lo, hi time.Time) (string, []any) {
	q := "SELECT trace_id, span_id, name, source, score, has_score, label, passed, explanation, created_at FROM (" +
		"SELECT * FROM " + t.Table(schema.TableOutcomes) + " WHERE project = ? AND trace_id IN ? AND run_start >= ? AND run_start <= ?" +
		" " + latestOf("trace_id, name, source, span_id") + ")" +
		" ORDER BY trace_id, created_at, name, source, span_id"
	return q, []any{project, set, lo.UTC().Truncate(time.Second), hi.UTC()}
}

// spanOutcomes adds the evaluation results the runs' spans carry to out.
func (r *core) spanOutcomes(ctx context.Context, project string, set clickhouse.GroupSet, lo, hi time.Time, out map[string][]Outcome) error {
	q, args := spanOutcomesSQL(r.store, project, set, lo, hi)
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("read span outcomes: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var traceID, spanID string
		var keys, values, events, eventAttrs []string
		if err := rows.Scan(&traceID, &spanID, &keys, &values, &events, &eventAttrs); err != nil {
			return fmt.Errorf("read span outcomes: %w", err)
		}
		out[traceID] = append(out[traceID], spanOutcomeList(traceID, spanID, keys, values, events, eventAttrs)...)
	}
	return rows.Err()
}

// spanOutcomeList is the evaluation results one span carries: the
// gen_ai.evaluation.* attributes, OpenInference's evaluations and
// annotations, and gen_ai.evaluation.result events.
func spanOutcomeList(traceID, spanID string, keys, values, events, eventAttrs []string) []Outcome {
	var out []Outcome
	attrs := make(map[string]string, len(keys))
	for i := range min(len(keys), len(values)) {
		attrs[keys[i]] = values[i]
	}
	if attrs[EvaluationName] != "" {
		out = append(out, outcomeOf(traceID, spanID, "attribute", func(k string) string { return attrs[k] }))
	}
	out = append(out, openInferenceOutcomes(traceID, spanID, attrs)...)
	for i, name := range events {
		if name != EvaluationEvent || i >= len(eventAttrs) {
			continue
		}
		ea := decodeObject(eventAttrs[i])
		out = append(out, outcomeOf(traceID, spanID, "event", func(k string) string {
			switch v := ea[k].(type) {
			case nil:
				return ""
			case string:
				return v
			default:
				return fmt.Sprint(v)
			}
		}))
	}
	return out
}

// spanOutcomesSQL builds spanOutcomes' statement: the spans of the runs in
// set, whose spans start in [lo, hi], that carry an evaluation result
// (an event, gen_ai.evaluation.* or OpenInference's evaluations and
// annotations), once each.
func spanOutcomesSQL(t tables, project string, set clickhouse.GroupSet, lo, hi time.Time) (string, []any) {
	where := "project = ? AND trace_id IN ? AND start >= ? AND start <= ?"
	args := []any{project, set, lo.UTC().Truncate(time.Second), hi.UTC()}
	q := "SELECT trace_id, span_id, attr_keys, attr_values, event_names, event_attrs FROM " + t.Table(schema.TableSpans) +
		" PREWHERE " + where + " WHERE has(event_names, ?) OR has(attr_keys, ?)" +
		" OR arrayExists(k -> k LIKE 'evaluations.%' OR k LIKE 'annotations.%' OR k LIKE 'trace.evaluations.%' OR k LIKE 'trace.annotations.%', attr_keys)" +
		" ORDER BY trace_id, start_ns, span_id LIMIT 1 BY trace_id, span_id"
	return q, append(args, EvaluationEvent, EvaluationName)
}

// outcomeOf reads an evaluation result through get (attribute or event
// attribute values as text).
func outcomeOf(traceID, spanID, origin string, get func(string) string) Outcome {
	o := Outcome{TraceID: traceID, SpanID: spanID, Name: get(EvaluationName), Label: get(EvaluationLabel),
		Explanation: get(EvaluationExplanation), Origin: origin, Source: "span"}
	if o.Name == "" {
		o.Name = "evaluation"
	}
	if v, err := strconv.ParseFloat(get(EvaluationScore), 64); err == nil && !math.IsNaN(v) && !math.IsInf(v, 0) {
		o.Score = &v
	}
	if b, err := strconv.ParseBool(get(EvaluationPassed)); err == nil {
		o.Passed = &b
	} else {
		o.Passed = VerdictOfLabel(o.Label)
	}
	return o
}

// RunExtent is when a run's first and last spans start, to the second
// (ErrNotFound for no such run).
func (r OutcomeReader) RunExtent(ctx context.Context, project, traceID string) (first, last time.Time, err error) {
	ext, err := r.locate(ctx, project, traceID)
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	if ext.rows == 0 {
		return time.Time{}, time.Time{}, ErrNotFound
	}
	return ext.lo, ext.hi, nil
}

// openInferenceOutcomes reads OpenInference's flattened evaluations and
// annotations (spec/annotations.md): evaluations.N.evaluation.{name,
// score, label, explanation} and annotations.N.annotation.{…,
// annotator_kind}, span-scoped or trace-scoped (trace.evaluations.…).
// An annotation's annotator kind (HUMAN, LLM, CODE) is its source.
func openInferenceOutcomes(traceID, spanID string, attrs map[string]string) []Outcome {
	var out []Outcome
	for _, scope := range []struct{ prefix, item, span string }{
		{"evaluations.", "evaluation", spanID}, {"annotations.", "annotation", spanID},
		{"trace.evaluations.", "evaluation", ""}, {"trace.annotations.", "annotation", ""},
	} {
		for n := 0; ; n++ {
			base := scope.prefix + strconv.Itoa(n) + "." + scope.item + "."
			name, ok := attrs[base+"name"]
			if !ok {
				break
			}
			o := outcomeOf(traceID, scope.span, "attribute", func(k string) string {
				switch k {
				case EvaluationName:
					return name
				case EvaluationScore:
					return attrs[base+"score"]
				case EvaluationLabel:
					return attrs[base+"label"]
				case EvaluationExplanation:
					return attrs[base+"explanation"]
				}
				return ""
			})
			if kind := attrs[base+"annotator_kind"]; kind != "" {
				o.Source = strings.ToLower(kind)
			}
			out = append(out, o)
		}
	}
	return out
}
