// Package alerts evaluates tally's alert rules (tool retry rate, tool and
// model latency, silent cache misses, tool errors, run cost, repeat loops)
// over the stored spans, keeps each alert's state across restarts, delivers
// alerts to Alertmanager and JSON webhooks, and exports the figures the rules
// use as Prometheus metrics.
package alerts

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/tallyhq/tally/support/params"
)

// Kind is what a rule measures.
type Kind string

// The rule kinds and what each measures are in kinds.go and the kind_*.go
// files beside it. Thresholds are in the unit each kind names.

// Duration is a time.Duration written in YAML as "15m", "1h30m" or "2d".
type Duration time.Duration

// UnmarshalYAML parses a duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return fmt.Errorf("line %d: want a duration like 15m, got %q", n.Line, n.Value)
	}
	v, err := parseDuration(s)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration as a string.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// MarshalJSON writes the duration as the string Go prints ("15m0s"), so
// the API shows rules as readably as their YAML.
func (d Duration) MarshalJSON() ([]byte, error) {
	return []byte(strconv.Quote(time.Duration(d).String())), nil
}

// UnmarshalJSON reads the string MarshalJSON writes (or any duration the
// rules file accepts), so API clients decode rules as they were sent.
func (d *Duration) UnmarshalJSON(b []byte) error {
	s, err := strconv.Unquote(string(b))
	if err != nil {
		return fmt.Errorf("want a duration string, got %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		if v, err = parseDuration(s); err != nil {
			return err
		}
	}
	*d = Duration(v)
	return nil
}

func parseDuration(s string) (time.Duration, error) {
	v, err := params.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: want a non-negative duration like 30s, 15m, 1h or 1d", s)
	}
	return v, nil
}

// Override changes a rule's threshold or sample minimum for one tool, model
// or agent, or turns the rule off for it. Every subject field that is set
// must match.
type Override struct {
	Tool       string   `yaml:"tool" json:"tool,omitempty"`
	Model      string   `yaml:"model" json:"model,omitempty"`
	Agent      string   `yaml:"agent" json:"agent,omitempty"`
	Task       string   `yaml:"task" json:"task,omitempty"`
	User       string   `yaml:"user" json:"user,omitempty"`
	Threshold  *float64 `yaml:"threshold" json:"threshold,omitempty"`
	MinSamples *int     `yaml:"min_samples" json:"min_samples,omitempty"`
	Disabled   bool     `yaml:"disabled" json:"disabled,omitempty"`
}

func (o Override) matches(labels map[string]string) bool {
	for k, v := range o.subjects() {
		if v != "" && labels[k] != v {
			return false
		}
	}
	return true
}

// subjects are the override's subject labels.
func (o Override) subjects() map[string]string {
	return map[string]string{"tool": o.Tool, "model": o.Model, "agent": o.Agent, "task": o.Task, "user": o.User}
}

// Rule is one alert rule. Each distinct subject (tool, model, agent+model)
// it measures in a project is a separate alert instance.
type Rule struct {
	// Name becomes the alertname label; letters, digits and underscores.
	Name string `yaml:"name" json:"name"`
	Kind Kind   `yaml:"kind" json:"kind"`
	// Threshold: a ratio for rates, milliseconds for latency, USD for
	// run_cost, a call count for repeat_loop; unused by cache_read_zero.
	// The alert condition is value > threshold (value ≥ threshold for
	// repeat_loop).
	Threshold float64 `yaml:"threshold" json:"threshold"`
	// Window is how far back each evaluation looks.
	Window Duration `yaml:"window" json:"window"`
	// For is how long the condition must hold before the alert fires.
	For Duration `yaml:"for" json:"for"`
	// MinSamples is the fewest calls (eligible calls for cache_read_zero)
	// in the window for the rule to judge a subject at all.
	MinSamples int `yaml:"min_samples" json:"min_samples"`
	// Measure selects what model_latency_p95 measures: duration (default)
	// or ttfc (time to first chunk, over streamed calls only); and what
	// version_regression watches: pass_rate (default), error_rate,
	// retry_rate, cost_per_run or p95_duration_ms.
	Measure string `yaml:"measure" json:"measure,omitempty"`
	// Period and By are spend_budget's: the calendar period (month, day or
	// hour, UTC) and what spend is summed by (project, agent, user, task).
	Period string `yaml:"period" json:"period,omitempty"`
	By     string `yaml:"by" json:"by,omitempty"`
	// Query is a query rule's metrics query (docs/search.md): each of its
	// series over the window is a subject, its whole-window value compared
	// with the threshold.
	Query       string            `yaml:"query" json:"query,omitempty"`
	Severity    string            `yaml:"severity" json:"severity"`
	Labels      map[string]string `yaml:"labels" json:"labels,omitempty"`
	Description string            `yaml:"description" json:"description,omitempty"`
	RunbookURL  string            `yaml:"runbook_url" json:"runbook_url,omitempty"`
	Overrides   []Override        `yaml:"overrides" json:"overrides,omitempty"`
}

// ruleFile is the rules file's shape.
type ruleFile struct {
	Rules []yaml.Node `yaml:"rules"`
}

var (
	nameRE  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	labelRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// reservedLabels are set by the evaluator; rules may not set them.
	reservedLabels = []string{"alertname", "project", "severity", "tool", "model", "agent"}
)

// LoadRules reads and validates a rules file.
func LoadRules(path string) ([]Rule, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read alert rules: %w", err)
	}
	rules, err := ParseRules(b)
	if err != nil {
		return nil, fmt.Errorf("alert rules %s: %w", path, err)
	}
	return rules, nil
}

// ParseRules parses and validates rules YAML, filling defaults. Errors name
// the line and the rule.
func ParseRules(data []byte) ([]Rule, error) {
	var typed struct {
		Rules []Rule `yaml:"rules"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&typed); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("parse: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if len(typed.Rules) == 0 {
		return nil, errors.New("no rules: want a top-level \"rules:\" list")
	}
	// The same document as nodes, for each rule's line number.
	var nodes ruleFile
	if err := yaml.Unmarshal(data, &nodes); err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	seen := map[string]int{}
	var errs []error
	for i := range typed.Rules {
		r := &typed.Rules[i]
		line := 0
		if i < len(nodes.Rules) {
			line = nodes.Rules[i].Line
		}
		if err := r.normalize(); err != nil {
			errs = append(errs, fmt.Errorf("rule %d %q (line %d): %w", i+1, r.Name, line, err))
			continue
		}
		if prev, dup := seen[r.Name]; dup {
			errs = append(errs, fmt.Errorf("rule %d %q (line %d): name already used by rule %d", i+1, r.Name, line, prev))
			continue
		}
		seen[r.Name] = i + 1
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return typed.Rules, nil
}

// normalize validates the rule and fills defaults.
func (r *Rule) normalize() error {
	if r.Name == "" {
		return errors.New("name: required")
	}
	if !nameRE.MatchString(r.Name) {
		return fmt.Errorf("name %q: want letters, digits and underscores (it becomes the alertname label)", r.Name)
	}
	spec, ok := specOf(r.Kind)
	if !ok {
		return fmt.Errorf("kind %q: want one of %s", r.Kind, strings.Join(kindNames(), ", "))
	}
	if r.Threshold == 0 {
		r.Threshold = spec.threshold
	}
	switch {
	case spec.noThreshold:
	case spec.zeroThreshold && r.Threshold >= 0:
	case r.Threshold <= 0:
		return fmt.Errorf("threshold: required and > 0 for kind %s (%s)", r.Kind, spec.unit)
	case spec.ratio && r.Threshold >= 1:
		return fmt.Errorf("threshold %v: a ratio below 1 (0.10 = 10%%)", r.Threshold)
	}
	if r.Window == 0 {
		r.Window = Duration(spec.window)
	}
	if r.MinSamples == 0 {
		r.MinSamples = spec.minSamples
	}
	if r.MinSamples < 0 {
		return fmt.Errorf("min_samples %d: want ≥ 0", r.MinSamples)
	}
	switch {
	case r.Measure == "" && len(spec.measures) > 0:
		r.Measure = spec.measures[0]
	case r.Measure == "":
	case len(spec.measures) == 0:
		var with []string
		for _, k := range kinds() {
			if len(k.measures) > 0 {
				with = append(with, string(k.kind))
			}
		}
		return fmt.Errorf("measure: only %s takes a measure", strings.Join(with, ", "))
	case !slices.Contains(spec.measures, r.Measure):
		return fmt.Errorf("measure %q: want %s", r.Measure, strings.Join(spec.measures, " or "))
	}
	if r.Kind == KindSpendBudget {
		r.Period, r.By = cmp.Or(r.Period, spendPeriods[0]), cmp.Or(r.By, spendBy[0])
		if !slices.Contains(spendPeriods, r.Period) {
			return fmt.Errorf("period %q: want %s", r.Period, strings.Join(spendPeriods, ", "))
		}
		if !slices.Contains(spendBy, r.By) {
			return fmt.Errorf("by %q: want %s", r.By, strings.Join(spendBy, ", "))
		}
		// The window is the period's (the longest month): which projects
		// spent in it.
		start, end := periodOf(r.Period, time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC))
		r.Window = Duration(end.Sub(start))
	} else if r.Period != "" || r.By != "" {
		return fmt.Errorf("period and by: only %s takes them", KindSpendBudget)
	}
	if r.Kind == KindQuery {
		if err := checkQuery(r.Query); err != nil {
			return err
		}
	} else if r.Query != "" {
		return fmt.Errorf("query: only %s takes a query", KindQuery)
	}
	if r.Severity == "" {
		r.Severity = "warning"
	}
	for k := range r.Labels {
		if !labelRE.MatchString(k) {
			return fmt.Errorf("labels: %q is not a valid label name", k)
		}
		for _, res := range reservedLabels {
			if k == res {
				return fmt.Errorf("labels: %q is set by tally and cannot be a rule label", k)
			}
		}
	}
	for i, o := range r.Overrides {
		if o.Tool == "" && o.Model == "" && o.Agent == "" && o.Task == "" && o.User == "" {
			return fmt.Errorf("overrides[%d]: name a tool, model, agent, task or user", i)
		}
		allowed := map[string]bool{}
		for _, sub := range spec.subjects {
			allowed[sub] = true
		}
		for k, v := range o.subjects() {
			if v != "" && !allowed[k] {
				return fmt.Errorf("overrides[%d]: kind %s has no %s to match", i, r.Kind, k)
			}
		}
		if o.Threshold != nil && *o.Threshold <= 0 && !spec.noThreshold && !(spec.zeroThreshold && *o.Threshold == 0) {
			return fmt.Errorf("overrides[%d]: threshold must be > 0", i)
		}
		if o.MinSamples != nil && *o.MinSamples < 0 {
			return fmt.Errorf("overrides[%d]: min_samples must be ≥ 0", i)
		}
	}
	return nil
}

// settingsFor returns the threshold and sample minimum for a subject, and
// whether the rule applies to it at all, after overrides (the last matching
// override wins).
func (r *Rule) settingsFor(labels map[string]string) (threshold float64, minSamples int, enabled bool) {
	threshold, minSamples, enabled = r.Threshold, r.MinSamples, true
	for _, o := range r.Overrides {
		if !o.matches(labels) {
			continue
		}
		if o.Threshold != nil {
			threshold = *o.Threshold
		}
		if o.MinSamples != nil {
			minSamples = *o.MinSamples
		}
		enabled = !o.Disabled
	}
	return threshold, minSamples, enabled
}
