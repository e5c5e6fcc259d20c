package retention

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tallyhq/tally/schema"
)

const day = 24 * time.Hour

// describe writes actions as table:kind:partition-or-cutoff[:projects].
func describe(actions []Action, now time.Time) []string {
	var out []string
	for _, a := range actions {
		s := a.Table + ":" + a.Kind + ":"
		if a.Kind == "drop" {
			s += a.Partition
		} else {
			s += fmt.Sprintf("%dd", int(now.Sub(a.Before)/day))
			if a.Except {
				s += ":all but[" + strings.Join(a.Projects, ",") + "]"
			} else {
				s += ":[" + strings.Join(a.Projects, ",") + "]"
			}
		}
		out = append(out, s)
	}
	return out
}

// TestPlan: which partitions go and which rows are deleted, at the edges.
// now is 2026-12-01 12:00 UTC: 30 days back is 2026-11-01 12:00, so the
// day 2026-10-31 (ending 11-01 00:00) goes and 2026-11-01 (ending 11-02)
// stays; 7 days back is 11-24 12:00.
func TestPlan(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	dayPart := func(table, id string) schema.Partition {
		start, end, _ := parsePartition(id)
		return schema.Partition{Table: table, ID: id, Start: start, End: end, Rows: 10, Bytes: 100}
	}
	parts := []schema.Partition{
		dayPart(schema.TableSpans, "20261031"), dayPart(schema.TableSpans, "20261101"),
		dayPart(schema.TableContent, "20261123"), dayPart(schema.TableContent, "20261124"),
		dayPart(schema.TableCostRollup, "202510"), dayPart(schema.TableCostRollup, "202511"),
		dayPart(schema.TableOutcomes, "202609"), dayPart(schema.TableOutcomes, "202610"), dayPart(schema.TableOutcomes, "202611"),
		dayPart(schema.TableRuns, "20261031"), dayPart(schema.TableRuns, "20261101"),
	}
	base := Policy{Spans: 30 * day, Content: 7 * day, Rollups: 400 * day}
	for _, c := range []struct {
		name string
		p    Policy
		want []string
	}{
		// 400 days back is 2025-10-27 12:00: October 2025 is not wholly older.
		{"defaults", base, []string{"spans:drop:20261031", "outcomes:drop:202609", "outcomes:drop:202610",
			"runs:drop:20261031", "content:drop:20261123"}},
		{"a project kept longer", func() Policy {
			p := base
			p.Projects = map[string]Override{"audit": {Spans: 90 * day}}
			return p
		}(), []string{
			// 90 days back is 2026-09-02 12:00: no partition is wholly older
			// (September 2026 ends after it); the others' rows go at 30 days.
			"spans:delete:30d:all but[audit]", "span_facts:delete:30d:all but[audit]",
			"outcomes:delete:30d:all but[audit]", "runs:delete:30d:all but[audit]",
			// The run rollup goes with the runs.
			"run_rollup_hourly:delete:30d:all but[audit]", "run_rollup_hours:delete:30d:all but[audit]",
			// content: audit's content is kept 7 days like all (the default content retention).
			"content:drop:20261123",
			// The search keys index goes with the spans.
			"search_keys:delete:30d:all but[audit]",
		}},
		{"a project kept shorter", func() Policy {
			p := base
			p.Projects = map[string]Override{"noisy": {Spans: 3 * day, Content: 1 * day}}
			return p
		}(), []string{
			"spans:drop:20261031", "spans:delete:3d:[noisy]", "span_facts:delete:3d:[noisy]",
			"outcomes:drop:202609", "outcomes:drop:202610", "outcomes:delete:3d:[noisy]",
			"runs:drop:20261031", "runs:delete:3d:[noisy]",
			"run_rollup_hourly:delete:3d:[noisy]", "run_rollup_hours:delete:3d:[noisy]",
			"content:drop:20261123", "content:delete:1d:[noisy]",
			"search_keys:delete:3d:[noisy]",
		}},
		{"forever", Policy{}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := describe(Plan(c.p, now, parts), now)
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("plan\n %v\nwant\n %v", got, c.want)
			}
		})
	}
}

// parsePartition is the id parsing the store does, for the test's rows.
func parsePartition(id string) (time.Time, time.Time, bool) {
	if len(id) == 8 {
		t, err := time.Parse("20060102", id)
		return t, t.AddDate(0, 0, 1), err == nil
	}
	t, err := time.Parse("200601", id)
	return t, t.AddDate(0, 1, 0), err == nil
}

// TestPolicyValidateAndOverrides: content no longer than spans, rollups
// no shorter; the override syntax.
func TestPolicyValidateAndOverrides(t *testing.T) {
	for _, bad := range []Policy{
		{Spans: 6 * time.Minute, Content: 0, Rollups: 400 * day}, // minutes: a typo for months
		{Spans: 30 * day, Content: 7 * day, Rollups: 400 * day, Projects: map[string]Override{"audit": {Spans: 500 * day}}},
		{Spans: 7 * day, Content: 30 * day, Rollups: 400 * day},
		{Spans: 30 * day, Content: 7 * day, Rollups: 10 * day},
		{Spans: 0, Content: 7 * day, Rollups: 10 * day}, // spans forever, rollups not
		{Spans: 30 * day, Content: 7 * day, Rollups: 400 * day, Projects: map[string]Override{"p": {Spans: 3 * day, Content: 5 * day}}},
	} {
		if bad.Validate() == nil {
			t.Errorf("%+v validated", bad)
		}
	}
	for _, good := range []Policy{DefaultPolicy(), {Spans: 30 * day, Content: 0, Rollups: 400 * day}, {}} {
		if err := good.Validate(); err != nil {
			t.Errorf("%+v: %v", good, err)
		}
	}
	o, err := ParseOverrides([]string{"audit=90d", "noisy=spans:3d,content:12h"})
	if err != nil {
		t.Fatal(err)
	}
	if o["audit"] != (Override{Spans: 90 * day}) || o["noisy"] != (Override{Spans: 3 * day, Content: 12 * time.Hour}) {
		t.Errorf("overrides %+v", o)
	}
	for _, bad := range []string{"audit", "=3d", "a=0d", "a=soon", "a=colour:3d", "a=1d,", "a=1d"} {
		specs := []string{bad}
		if bad == "a=1d" {
			specs = []string{"a=1d", "a=2d"}
		}
		if _, err := ParseOverrides(specs); err == nil {
			t.Errorf("ParseOverrides(%q): no error", specs)
		}
	}
	// A project's content is kept no longer than its spans.
	p := Policy{Spans: 30 * day, Content: 7 * day, Projects: map[string]Override{"short": {Spans: 2 * day}}}
	if got := p.Of(schema.ClassContent, "short"); got != 2*day {
		t.Errorf("short's content kept %s, want 48h", got)
	}
}
