package query

import "testing"

// A task name that a --run-cap value cannot carry gets no suggested spec.
func TestSuggestedSpecOnlyForWritableTasks(t *testing.T) {
	for _, tc := range []struct {
		task     string
		writable bool
	}{
		{"support", true},
		{"", false},
		{"two words", false},
		{"tab\tname", false},
		{"nbsp\u00a0name", false}, // white space strings.Fields splits on
		{"a=b", false},
		{"a,b", false}, // the flag's list separator
		{`a"b`, false}, // the flag's CSV quote
	} {
		figs := []*CapFigure{{Suggested: 10}, {Suggested: 5}, {Suggested: 3970}, {Suggested: 0.5}, {Suggested: 10000}}
		got := suggestedSpec(tc.task, figs)
		if (got != "") != tc.writable {
			t.Errorf("task %q: spec %q, want writable=%v", tc.task, got, tc.writable)
		}
		if tc.writable && got != "task="+tc.task+" iterations=10 tokens=3970 cost=0.5 wall=10s" {
			t.Errorf("task %q: spec %q", tc.task, got)
		}
	}
}
