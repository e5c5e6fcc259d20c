package query

import "testing"

// TestOpenInferenceOutcomes: OpenInference's flattened evaluations and
// annotations (spec/annotations.md) read as outcomes; an annotation's
// annotator kind is its source, a trace-scoped one names no span, and a
// label reads as a verdict when it is one.
func TestOpenInferenceOutcomes(t *testing.T) {
	attrs := map[string]string{
		"evaluations.0.evaluation.name":           "correctness",
		"evaluations.0.evaluation.score":          "0.9",
		"evaluations.0.evaluation.label":          "correct",
		"evaluations.1.evaluation.name":           "tone",
		"evaluations.1.evaluation.label":          "friendly",
		"annotations.0.annotation.name":           "review",
		"annotations.0.annotation.label":          "fail",
		"annotations.0.annotation.annotator_kind": "HUMAN",
		"trace.evaluations.0.evaluation.name":     "goal",
		"trace.evaluations.0.evaluation.score":    "1",
	}
	got := openInferenceOutcomes("t", "s", attrs)
	type want struct {
		name, span, source string
		score              float64
		hasScore           bool
		passed             *bool
	}
	yes, no := true, false
	wants := []want{
		{"correctness", "s", "span", 0.9, true, &yes},
		{"tone", "s", "span", 0, false, nil},
		{"review", "s", "human", 0, false, &no},
		{"goal", "", "span", 1, true, nil},
	}
	if len(got) != len(wants) {
		t.Fatalf("%d outcomes, want %d: %+v", len(got), len(wants), got)
	}
	for i, w := range wants {
		o := got[i]
		if o.Name != w.name || o.SpanID != w.span || o.Source != w.source || (o.Score != nil) != w.hasScore ||
			(w.hasScore && *o.Score != w.score) || (o.Passed == nil) != (w.passed == nil) || (w.passed != nil && *o.Passed != *w.passed) {
			t.Errorf("outcome %d: %+v, want %+v", i, o, w)
		}
	}
}
