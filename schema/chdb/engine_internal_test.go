package chdb

import "testing"

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
			got, err := c.settingsDiff(tc.want)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.statement {
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
		got, err := c.settingsDiff(want)
		if err != nil {
			t.Fatal(err)
		}
		if got != step.set {
			t.Fatalf("statement %d: %q, want %q", i, got, step.set)
		}
		c.settings = want
	}
	c = &conn{settings: map[string]string{}}
	if _, err := c.settingsDiff(map[string]string{"x = 1; DROP TABLE t": "1"}); err == nil {
		t.Fatal("a setting name that is not an identifier is not an error")
	}
}
