package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Figure is one measured number with what it was measured on.
type Figure struct {
	// ID is stable across runs, e.g. "ingest.efficiency".
	ID   string `json:"id"`
	Name string `json:"name"`
	// Value is the figure; meaningless when Available is false.
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
	// Goal is the target from the benchmark issue, e.g. "≥ 0.75", "" when none.
	Goal string `json:"goal,omitempty"`
	// Met says whether Value reaches Goal (nil without a goal).
	Met *bool `json:"met,omitempty"`
	// Available is false when this build cannot measure the figure (e.g. an
	// API it needs does not exist yet); Reason says why.
	Available bool   `json:"available"`
	Reason    string `json:"reason,omitempty"`
	// Inputs are what the figure was measured on: span counts, request size,
	// concurrency, durations.
	Inputs map[string]any `json:"inputs,omitempty"`
	// Detail holds related numbers (the ratio's parts, percentiles, checks).
	Detail map[string]any `json:"detail,omitempty"`
}

// Results is one run of the suite.
type Results struct {
	Machine  Machine   `json:"machine"`
	Started  time.Time `json:"started"`
	Duration string    `json:"duration"`
	Config   Config    `json:"config"`
	Figures  []Figure  `json:"figures"`
	Notes    []string  `json:"notes,omitempty"`
}

// Figure returns the figure with the id, or nil.
func (r *Results) Figure(id string) *Figure {
	for i := range r.Figures {
		if r.Figures[i].ID == id {
			return &r.Figures[i]
		}
	}
	return nil
}

func (r *Results) add(f Figure) *Figure {
	r.Figures = append(r.Figures, f)
	return &r.Figures[len(r.Figures)-1]
}

// unavailable records a figure this build cannot measure.
func (r *Results) unavailable(id, name, unit, goal, reason string, inputs map[string]any) {
	r.add(Figure{ID: id, Name: name, Unit: unit, Goal: goal, Reason: reason, Inputs: inputs})
}

// atMost and atLeast judge a value against a goal.
func atMost(v, goal float64) *bool  { ok := v <= goal; return &ok }
func atLeast(v, goal float64) *bool { ok := v >= goal; return &ok }

// Write stores results.json and results.md in dir.
func (r *Results) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("results dir: %w", err)
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(js, '\n'), 0o644); err != nil {
		return fmt.Errorf("write results.json: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "results.md"), []byte(r.Markdown()), 0o644); err != nil {
		return fmt.Errorf("write results.md: %w", err)
	}
	return nil
}

// Markdown is the human-readable table of the figures.
func (r *Results) Markdown() string {
	var b strings.Builder
	m := r.Machine
	fmt.Fprintf(&b, "# tally benchmarks\n\n")
	fmt.Fprintf(&b, "Run %s, took %s. Machine: %d cores (%s), %d MiB memory, %s, ClickHouse %s, %s; load average at start %s.\n\n",
		r.Started.UTC().Format(time.RFC3339), r.Duration, m.Cores, m.CPUModel, m.MemoryMiB, m.OS, m.ClickHouseVersion, m.GoVersion, m.LoadAverage)
	fmt.Fprintf(&b, "| figure | value | goal | inputs |\n|---|---|---|---|\n")
	for _, f := range r.Figures {
		val := "not available: " + f.Reason
		if f.Available {
			val = FormatValue(f.Value) + " " + f.Unit
		}
		goal := f.Goal
		if f.Met != nil {
			if *f.Met {
				goal += " ✓"
			} else {
				goal += " ✗"
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", f.Name, val, goal, formatMap(f.Inputs))
	}
	if side := r.sideBySide(); side != "" {
		b.WriteString("\n## ClickHouse server and embedded store side by side\n\n")
		b.WriteString(side)
	}
	b.WriteString("\n## Details\n\n")
	for _, f := range r.Figures {
		if len(f.Detail) == 0 {
			continue
		}
		fmt.Fprintf(&b, "- **%s** (`%s`): %s\n", f.Name, f.ID, formatMap(f.Detail))
	}
	if len(r.Notes) > 0 {
		b.WriteString("\n## Notes\n\n")
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	return b.String()
}

// sideBySide is a table of the figures measured on both stores: the server's
// (ID x) beside the embedded store's (ID embedded.x); "" when none are.
func (r *Results) sideBySide() string {
	var b strings.Builder
	for _, f := range r.Figures {
		e := r.Figure("embedded." + f.ID)
		if e == nil || strings.HasPrefix(f.ID, "embedded.") {
			continue
		}
		if b.Len() == 0 {
			fmt.Fprintf(&b, "ClickHouse server %s; embedded engine %s.\n\n", r.Machine.ClickHouseVersion, r.Machine.EmbeddedVersion)
			b.WriteString("| figure | server | embedded | goal |\n|---|---|---|---|\n")
		}
		value := func(f *Figure) string {
			if !f.Available {
				return "n/a"
			}
			v := FormatValue(f.Value) + " " + f.Unit
			if f.Met != nil && !*f.Met {
				v += " ✗"
			}
			return v
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", f.Name, value(&f), value(e), f.Goal)
	}
	return b.String()
}

// FormatValue prints a figure with sensible precision.
func FormatValue(v float64) string {
	switch a := math.Abs(v); {
	case a == 0:
		return "0"
	case a >= 1000:
		return groupThousands(fmt.Sprintf("%.0f", v))
	case a >= 100:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}

func groupThousands(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

func formatMap(m map[string]any) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		v := m[k]
		if f, ok := v.(float64); ok {
			v = FormatValue(f)
		}
		parts = append(parts, fmt.Sprintf("%s=%v", k, v))
	}
	return strings.Join(parts, ", ")
}
