package chdb

import (
	"strings"
	"testing"
)

func TestSettingsDiff(t *testing.T) {
	for _, tc := range []struct {
		name      string
		have      map[string]string
		want      map[string]string
		statement string
	}{
		{"none", nil, nil, ""},
		{"same", map[string]string{"max_threads": "2"}, map[string]string{"max_threads": "2"}, ""},
		{"new", nil, map[string]string{"max_threads": "2", "max_execution_time": "35"},
			"SET max_execution_time = '35', max_threads = '2'"},
		{"changed and dropped", map[string]string{"max_threads": "2", "join_use_nulls": "1"}, map[string]string{"max_threads": "4"},
			"SET join_use_nulls = DEFAULT, max_threads = '4'"},
		{"quoted", nil, map[string]string{"format_csv_delimiter": `'\`}, `SET format_csv_delimiter = '\'\\'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &conn{settings: tc.have}
			if c.settings == nil {
				c.settings = map[string]string{}
			}
			if got := c.settingsDiff(tc.want); got != tc.statement {
				t.Fatalf("settingsDiff = %q, want %q", got, tc.statement)
			}
		})
	}
	// A statement's setting over a configured one goes back to the
	// configured value, not the engine's default, after it.
	c := &conn{base: map[string]string{"max_execution_time": "30"}, settings: map[string]string{"max_execution_time": "30"}}
	steps := []struct {
		statement map[string]string
		set       string
	}{
		{map[string]string{"max_execution_time": "45"}, "SET max_execution_time = '45'"},
		{nil, "SET max_execution_time = '30'"},
		{map[string]string{"max_threads": "1"}, "SET max_threads = '1'"},
		{nil, "SET max_threads = DEFAULT"},
		{nil, ""},
	}
	for i, step := range steps {
		want := c.wanted(step.statement)
		if got := c.settingsDiff(want); got != step.set {
			t.Fatalf("statement %d: %q, want %q", i, got, step.set)
		}
		c.settings = want
	}
	// A statement's setting name that is not an identifier is refused
	// before anything reaches the connection (which is never used here).
	e := &Engine{}
	if _, err := e.run(c, Statement{SQL: []byte("SELECT 1"), Settings: map[string]string{"x = 1; DROP TABLE t": "1"}}); err == nil ||
		!strings.Contains(err.Error(), "must match") {
		t.Fatalf("a setting name that is not an identifier: %v, want it refused", err)
	}
}
