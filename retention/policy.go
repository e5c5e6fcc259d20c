// Package retention ages data out so that the disk never fills: it keeps
// spans (and what is derived from them per span and run), captured content
// and hourly rollups each for their own time, for all projects or per
// project, by dropping whole partitions — which every ClickHouse version
// does at once — and, for projects kept shorter than the partitions
// dropped, deleting their rows. It plans (Plan) apart from acting (Job),
// so `tally retention` can say what the next run would drop.
package retention

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tallyhq/tally/schema"
	"github.com/tallyhq/tally/support/params"
)

// Policy is how long each data class is kept: for every project, and the
// overrides of some. A zero duration keeps the class forever.
type Policy struct {
	Spans, Content, Rollups time.Duration
	Projects                map[string]Override
}

// Override is one project's retention; zero fields take the policy's.
type Override struct {
	Spans, Content time.Duration
}

// DefaultPolicy keeps spans 30 days, content 7 and rollups 400.
func DefaultPolicy() Policy {
	return Policy{Spans: 30 * 24 * time.Hour, Content: 7 * 24 * time.Hour, Rollups: 400 * 24 * time.Hour}
}

// ParseOverrides reads per-project retention written project=DURATION
// (spans and content alike, content never longer than the default) or
// project=spans:DURATION,content:DURATION (durations as 30d, 12h).
func ParseOverrides(specs []string) (map[string]Override, error) {
	out := map[string]Override{}
	for _, spec := range specs {
		project, rest, ok := strings.Cut(spec, "=")
		if !ok || project == "" || rest == "" {
			return nil, fmt.Errorf("project retention %q: want project=30d or project=spans:30d,content:7d", spec)
		}
		if _, dup := out[project]; dup {
			return nil, fmt.Errorf("project retention %q: project %s given twice", spec, project)
		}
		var o Override
		for _, part := range strings.Split(rest, ",") {
			class, d, named := strings.Cut(part, ":")
			if !named {
				class, d = "", part
			}
			dur, err := params.ParseDuration(d)
			if err != nil || dur <= 0 {
				return nil, fmt.Errorf("project retention %q: %q is not a positive duration", spec, d)
			}
			switch class {
			case "", schema.ClassSpans:
				o.Spans = dur
			case schema.ClassContent:
				o.Content = dur
			default:
				return nil, fmt.Errorf("project retention %q: class %q: want spans or content", spec, class)
			}
		}
		out[project] = o
	}
	return out, nil
}

// MinRetention is the shortest retention taken: a duration in minutes is
// a typo for months more often than a wish.
const MinRetention = time.Hour

// Validate checks that every retention is at least MinRetention (or 0,
// forever), that content is not kept longer than spans (0: as long as
// spans) and rollups not shorter, for all and per project.
func (p Policy) Validate() error {
	longer := func(a, b time.Duration) bool { return a == 0 && b != 0 || b != 0 && a > b } // a keeps longer than b
	for name, d := range map[string]time.Duration{"--retention": p.Spans, "--content-retention": p.Content, "--rollup-retention": p.Rollups} {
		if d != 0 && d < MinRetention {
			return fmt.Errorf("%s %s: at least %s (0 keeps forever)", name, d, MinRetention)
		}
	}
	if p.Content != 0 && longer(p.Content, p.Spans) {
		return fmt.Errorf("--content-retention %s is longer than --retention %s: content lives on spans", show(p.Content), show(p.Spans))
	}
	if longer(p.Spans, p.Rollups) {
		return fmt.Errorf("--rollup-retention %s is shorter than --retention %s", show(p.Rollups), show(p.Spans))
	}
	for name, o := range p.Projects {
		for _, d := range []time.Duration{o.Spans, o.Content} {
			if d != 0 && d < MinRetention {
				return fmt.Errorf("project %s: retention %s: at least %s", name, d, MinRetention)
			}
		}
		if o.Content != 0 && longer(o.Content, p.Of(schema.ClassSpans, name)) {
			return fmt.Errorf("project %s: content kept %s, longer than its spans (%s)", name, show(o.Content), show(p.Of(schema.ClassSpans, name)))
		}
		if longer(p.Of(schema.ClassSpans, name), p.Rollups) {
			return fmt.Errorf("project %s: spans kept %s, longer than the rollups (--rollup-retention %s)", name, show(p.Of(schema.ClassSpans, name)), show(p.Rollups))
		}
	}
	return nil
}

// show writes a retention: its duration, or "forever".
func show(d time.Duration) string {
	if d == 0 {
		return "forever"
	}
	return params.FormatDuration(d)
}

// Of is how long a project's rows of a class are kept (0: forever). A
// project's content is kept no longer than its spans.
func (p Policy) Of(class, project string) time.Duration {
	o := p.Projects[project]
	switch class {
	case schema.ClassSpans:
		if o.Spans != 0 {
			return o.Spans
		}
		return p.Spans
	case schema.ClassContent:
		c := p.Content
		if o.Content != 0 {
			c = o.Content
		}
		if s := p.Of(schema.ClassSpans, project); s != 0 && (c == 0 || c > s) {
			c = s
		}
		return c
	}
	return p.Rollups
}

// Action is one step of a retention run: drop a partition, or delete the
// rows older than Before of some projects (Projects; with Except, of all
// projects but those).
type Action struct {
	Table     string    `json:"table"`
	Class     string    `json:"class"`
	Kind      string    `json:"kind"` // "drop" or "delete"
	Partition string    `json:"partition,omitempty"`
	Before    time.Time `json:"before"`
	// From bounds a delete below: the rows older are in partitions the
	// run drops.
	From     time.Time `json:"from,omitzero"`
	Projects []string  `json:"projects,omitempty"`
	Except   bool      `json:"except,omitempty"`
	Rows     uint64    `json:"rows"`
	Bytes    uint64    `json:"bytes,omitempty"`
}

// dayStart is the start of t's UTC day: deletes cut on day boundaries, so
// a run issues a new one at most once a day (each is a rewrite of parts).
func dayStart(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// Plan works out what a retention run at now does to the partitions
// listed. Per table: the partitions wholly older than the longest
// retention of the table's class (the default or any project's) are
// dropped; then, for each shorter retention, the rows older than its cutoff
// of the projects kept that long are deleted (tables with a project
// column), cut at the start of that cutoff's UTC day (rows are kept up to
// a day longer, and a delete is issued at most once a day). Deletes are
// planned with Rows 0: the job counts them first.
func Plan(p Policy, now time.Time, parts []schema.Partition) []Action {
	var out []Action
	overrides := make([]string, 0, len(p.Projects))
	for name := range p.Projects {
		overrides = append(overrides, name)
	}
	slices.Sort(overrides)
	for _, t := range schema.RetainedTables() {
		// The retention of each project group: the default's and each
		// override's.
		def := p.Of(t.Class, "")
		longest := def
		for _, name := range overrides {
			r := p.Of(t.Class, name)
			if r == 0 || longest == 0 {
				longest = 0
				continue
			}
			longest = max(longest, r)
		}
		var dropped time.Time // the end of the newest partition dropped
		if longest != 0 {
			cutoff := now.Add(-longest)
			for _, part := range parts {
				if part.Table == t.Name && !part.End.After(cutoff) {
					out = append(out, Action{Table: t.Name, Class: t.Class, Kind: "drop", Partition: part.ID, Before: part.End,
						Rows: part.Rows, Bytes: part.Bytes})
					if part.End.After(dropped) {
						dropped = part.End
					}
				}
			}
		}
		if !t.PerProject {
			continue
		}
		// Shorter groups: the default (every project without its own
		// retention of this class) and overrides, by duration.
		byDur := map[time.Duration][]string{}
		for _, name := range overrides {
			if r := p.Of(t.Class, name); r != 0 && r != def {
				byDur[r] = append(byDur[r], name)
			}
		}
		if def != 0 && def != longest {
			var keepOthers []string // projects whose retention differs from the default's
			for _, name := range overrides {
				if p.Of(t.Class, name) != def {
					keepOthers = append(keepOthers, name)
				}
			}
			out = append(out, Action{Table: t.Name, Class: t.Class, Kind: "delete", Before: dayStart(now.Add(-def)), From: dropped, Projects: keepOthers, Except: true})
		}
		durs := make([]time.Duration, 0, len(byDur))
		for d := range byDur {
			durs = append(durs, d)
		}
		slices.Sort(durs)
		for _, d := range durs {
			if d == longest {
				continue
			}
			out = append(out, Action{Table: t.Name, Class: t.Class, Kind: "delete", Before: dayStart(now.Add(-d)), From: dropped, Projects: byDur[d]})
		}
	}
	return out
}
