package alerts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sort"

	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tallyhq/tally/query"
)

// Source is what the evaluator reads; *query.Reader implements it.
type Source interface {
	Projects(ctx context.Context, since time.Time) ([]string, error)
	Tools(ctx context.Context, f query.ToolFilter) ([]query.ToolStats, error)
	Models(ctx context.Context, w query.Window) ([]query.ModelStats, error)
	RunsOverBudget(ctx context.Context, w query.Window, budgetUSD float64, limit int) ([]query.RunCost, error)
	RepeatLoops(ctx context.Context, w query.Window, minCalls, limit int) ([]query.RepeatLoop, error)
	UsageByMinute(ctx context.Context, w query.Window) ([]query.UsageMinute, error)
	LatestVersionChanges(ctx context.Context, project string, since, until time.Time, outcome string) ([]query.Comparison, error)
	LatestPeriodChanges(ctx context.Context, project string, window time.Duration, until time.Time, outcome string) ([]query.Comparison, error)
	Signals(ctx context.Context, f query.SignalFilter) (*query.SignalsReport, error)
	Costs(ctx context.Context, f query.CostFilter) (query.CostReport, error)
	SearchMetrics(ctx context.Context, req query.SearchRequest, step time.Duration) (query.MetricsResult, error)
}

// CacheVerdict is the cache check's judgement of one (agent, model) over a
// window (see docs/design.md, "Cache health").
type CacheVerdict struct {
	Agent string
	Model string
	// Verdict is healthy, never_hit, below_min_prefix or insufficient_data.
	Verdict string
	// EligibleCalls are the calls large enough to be cacheable.
	EligibleCalls   int
	CacheReadTokens uint64
	ExampleTraceIDs []string
}

// VerdictNeverHit is the cache verdict cache_read_zero alerts on.
const VerdictNeverHit = "never_hit"

// CacheHealth judges prompt caching per (agent, model); the cache-health
// query satisfies it.
type CacheHealth interface {
	CacheVerdicts(ctx context.Context, project string, since, until time.Time) ([]CacheVerdict, error)
}

// Config configures an Evaluator. Zero fields take the defaults named.
type Config struct {
	Rules  []Rule
	Source Source
	// Cache serves cache_read_zero rules; without it those rules are skipped
	// (with a warning at start).
	Cache CacheHealth
	// Projects to evaluate; default: every project with spans in the
	// longest rule window (and every project with alert state).
	Projects []string
	// Targets receive notifications (Alertmanager, webhooks).
	Targets []Target
	// StatePath is the JSON file alert state survives restarts in (e.g.
	// <data dir>/alerts-state.json); "" keeps state in memory only.
	StatePath string
	// ExternalURL is tally's UI address, for generatorURL links
	// (default http://localhost:4318).
	ExternalURL string
	// Interval between evaluations (default 1m).
	Interval time.Duration
	// ResendInterval between re-sends of a firing alert (default 1m, as
	// Prometheus).
	ResendInterval time.Duration
	// ResolvedRetention is how long resolved alerts stay listed (default 24h).
	ResolvedRetention time.Duration
	// HistoryRetention is how long a resolved episode stays in the alert
	// history (default 30 days); MaxHistory the most episodes kept, the
	// oldest dropped first (default 10,000, about 5 MB of state file).
	HistoryRetention time.Duration
	MaxHistory       int
	// QueueSize bounds each target's queue of batches (default 64).
	QueueSize int
	// RetryBackoff is the first delay before re-trying a failed delivery;
	// it doubles up to 30 s, for at most MaxAttempts attempts (default
	// 500ms and 8).
	RetryBackoff time.Duration
	MaxAttempts  int
	// Registerer receives the metrics; nil registers nothing.
	Registerer prometheus.Registerer
	Logger     *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Gate, when set, gives the signal rules' review of a window's runs
	// its turn among the background loads.
	Gate Gate
}

// Evaluator evaluates rules every interval, keeps alert state and delivers
// notifications.
type Evaluator struct {
	cfg         Config
	log         *slog.Logger
	metrics     *metrics
	dispatchers []*dispatcher

	mu        sync.Mutex // guards instances and history
	instances map[string]*instance
	history   []Episode // resolved episodes, oldest first
}

// NewEvaluator validates the configuration, loads saved alert state and
// registers metrics. Call Run to start evaluating and delivering.
func NewEvaluator(cfg Config) (*Evaluator, error) {
	if cfg.Source == nil {
		return nil, errors.New("alerts: no source to evaluate rules against")
	}
	if cfg.ExternalURL == "" {
		cfg.ExternalURL = "http://localhost:4318"
	}
	cfg.ExternalURL = strings.TrimRight(cfg.ExternalURL, "/")
	setDefault(&cfg.Interval, time.Minute)
	setDefault(&cfg.ResendInterval, time.Minute)
	setDefault(&cfg.ResolvedRetention, 24*time.Hour)
	setDefault(&cfg.HistoryRetention, 30*24*time.Hour)
	if cfg.MaxHistory <= 0 {
		cfg.MaxHistory = 10000
	}
	setDefault(&cfg.RetryBackoff, 500*time.Millisecond)
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = 64
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 8
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	instances, history, err := loadState(cfg.StatePath)
	if err != nil {
		return nil, err
	}
	e := &Evaluator{cfg: cfg, log: log, metrics: m, instances: instances, history: history}
	for _, t := range cfg.Targets {
		e.dispatchers = append(e.dispatchers, &dispatcher{target: t, queue: make(chan []Notification, cfg.QueueSize),
			backoff: cfg.RetryBackoff, maxBackoff: 30 * time.Second, maxAttempts: cfg.MaxAttempts, metrics: m, log: log})
	}
	if cfg.Cache == nil {
		for _, r := range cfg.Rules {
			if r.Kind == KindCacheReadZero {
				log.Warn("no cache-health source: cache_read_zero rule skipped", "rule", r.Name)
			}
		}
	}
	return e, nil
}

func setDefault(d *time.Duration, v time.Duration) {
	if *d <= 0 {
		*d = v
	}
}

// Run delivers notifications and evaluates the rules every interval (the
// first time at once) until ctx ends. Evaluation errors are logged and
// counted, never fatal.
func (e *Evaluator) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, d := range e.dispatchers {
		wg.Add(1)
		go func() { defer wg.Done(); d.run(ctx) }()
	}
	ticker := time.NewTicker(e.cfg.Interval)
	defer ticker.Stop()
	for {
		if err := e.Evaluate(ctx); err != nil && ctx.Err() == nil {
			e.log.Error("alert evaluation", "err", err)
		}
		select {
		case <-ctx.Done():
			wg.Wait()
			return nil
		case <-ticker.C:
		}
	}
}

// RunDelivery only delivers queued notifications until ctx ends, for callers
// that drive Evaluate themselves.
func (e *Evaluator) RunDelivery(ctx context.Context) {
	var wg sync.WaitGroup
	for _, d := range e.dispatchers {
		wg.Add(1)
		go func() { defer wg.Done(); d.run(ctx) }()
	}
	wg.Wait()
}

// sample is one subject's measurement by one rule in one project.
type sample struct {
	subject   map[string]string // tool / model / agent labels
	value     float64
	samples   int
	examples  []string
	detail    string     // the summary's text after "value vs threshold"
	runsQuery url.Values // filters of the runs page the alert links to
	cond      func(value, threshold float64, samples, minSamples int) bool
}

func above(value, threshold float64, samples, minSamples int) bool {
	return samples >= minSamples && samples > 0 && value > threshold
}

func atLeast(value, threshold float64, samples, minSamples int) bool {
	return samples >= minSamples && samples > 0 && value >= threshold
}

// cycle memoizes the queries of one evaluation: rules sharing a window share
// their tool and model statistics.
type cycle struct {
	src    Source
	gate   Gate
	now    time.Time
	tools  map[string][]query.ToolStats
	models map[string][]query.ModelStats
	// signalReps memoizes the safety review per project and window.
	signalReps map[string]*query.SignalsReport
}

func (c *cycle) window(project string, d time.Duration) query.Window {
	return query.Window{Project: project, Since: c.now.Add(-d), Until: c.now}
}

func (c *cycle) toolStats(ctx context.Context, project string, d time.Duration) ([]query.ToolStats, error) {
	key := project + "\x00" + d.String()
	if s, ok := c.tools[key]; ok {
		return s, nil
	}
	s, err := c.src.Tools(ctx, query.ToolFilter{Window: c.window(project, d), PerMinute: true})
	if err != nil {
		return nil, err
	}
	c.tools[key] = s
	return s, nil
}

func (c *cycle) modelStats(ctx context.Context, project string, d time.Duration) ([]query.ModelStats, error) {
	key := project + "\x00" + d.String()
	if s, ok := c.models[key]; ok {
		return s, nil
	}
	s, err := c.src.Models(ctx, c.window(project, d))
	if err != nil {
		return nil, err
	}
	c.models[key] = s
	return s, nil
}

// measure evaluates one rule in one project with its kind's measure.
func (e *Evaluator) measure(ctx context.Context, c *cycle, r *Rule, project string, window time.Duration) ([]sample, error) {
	spec, ok := specOf(r.Kind)
	if !ok {
		return nil, fmt.Errorf("rule %s: unknown kind %q", r.Name, r.Kind)
	}
	return spec.measure(ctx, e, c, r, project, window)
}

// formatWindow renders a window briefly: 15m, 1h, 1h30m, 45s.
func formatWindow(d time.Duration) string {
	s := d.Round(time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// projects lists the projects to evaluate.
func (e *Evaluator) projects(ctx context.Context, now time.Time, rules []Rule) ([]string, error) {
	if len(e.cfg.Projects) > 0 {
		return e.cfg.Projects, nil
	}
	var longest time.Duration
	for _, r := range rules {
		longest = max(longest, time.Duration(r.Window))
	}
	ps, err := e.cfg.Source.Projects(ctx, now.Add(-longest))
	if err != nil {
		return nil, err
	}
	return ps, nil
}

// Evaluate runs every rule once at the current time: it moves alert
// instances through their states, updates metrics, saves state and queues
// the notifications due. A rule whose query fails leaves its alerts as they
// were; the error is returned after the other rules were evaluated.
func (e *Evaluator) Evaluate(ctx context.Context) error {
	began := time.Now()
	now := e.cfg.Now().UTC()
	defer func() { e.metrics.evalDuration.Observe(time.Since(began).Seconds()) }()
	projects, err := e.projects(ctx, now, e.cfg.Rules)
	if err != nil {
		e.metrics.evalFailures.Inc()
		return fmt.Errorf("evaluate alerts: %w", err)
	}
	c := &cycle{src: e.cfg.Source, gate: e.cfg.Gate, now: now, tools: map[string][]query.ToolStats{}, models: map[string][]query.ModelStats{}}
	type measured struct {
		rule    *Rule
		project string
		samples []sample
	}
	var results []measured
	failed := map[string]bool{} // rule + project
	var errs []error
	for _, p := range projects {
		for i := range e.cfg.Rules {
			r := &e.cfg.Rules[i]
			samples, err := e.measure(ctx, c, r, p, time.Duration(r.Window))
			if err != nil {
				e.metrics.evalFailures.Inc()
				failed[r.Name+"\x00"+p] = true
				errs = append(errs, fmt.Errorf("rule %s, project %s: %w", r.Name, p, err))
				continue
			}
			results = append(results, measured{r, p, samples})
		}
	}

	e.mu.Lock()
	seen := map[string]bool{}
	for _, m := range results {
		for _, s := range m.samples {
			threshold, minSamples, enabled := m.rule.settingsFor(s.subject)
			if !enabled {
				continue
			}
			cond := s.cond(s.value, threshold, s.samples, minSamples)
			key := instanceKey(m.rule.Name, m.project, s.subject)
			in := e.instances[key]
			if in == nil {
				if !cond {
					continue
				}
				in = &instance{subject: s.subject}
				e.instances[key] = in
			}
			seen[key] = true
			e.describe(in, m.rule, m.project, s, threshold, now)
			e.step(in, cond, time.Duration(m.rule.For), now)
		}
	}
	for key, in := range e.instances {
		if !seen[key] && !failed[in.Rule+"\x00"+in.Project] {
			e.step(in, false, 0, now)
		}
	}
	e.prune(now)
	e.countStates()
	batch := e.due(now)
	e.pruneHistory(now)
	saveErr := saveState(e.cfg.StatePath, e.instances, e.history)
	e.mu.Unlock()

	if len(batch) > 0 {
		for _, d := range e.dispatchers {
			d.enqueue(batch)
		}
	}
	if saveErr != nil {
		errs = append(errs, saveErr)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("evaluate alerts: %w", err)
	}
	return nil
}

// describe refreshes an instance's labels, annotations and latest value.
// A resolved or firing instance whose condition no longer holds keeps the
// annotations it fired with, but shows the current value.
func (e *Evaluator) describe(in *instance, r *Rule, project string, s sample, threshold float64, now time.Time) {
	in.Rule, in.Kind, in.Project = r.Name, r.Kind, project
	in.Value, in.Threshold, in.Samples = s.value, threshold, s.samples
	if in.State == StateFiring && !s.cond(s.value, threshold, s.samples, 0) {
		return
	}
	labels := map[string]string{}
	for k, v := range r.Labels {
		labels[k] = v
	}
	for k, v := range s.subject {
		labels[k] = v
	}
	labels["alertname"], labels["project"], labels["severity"] = r.Name, project, r.Severity
	in.Labels = labels
	in.ExampleRunIDs = append([]string{}, s.examples...)
	in.GeneratorURL = e.cfg.ExternalURL + "/runs?" + s.runsQuery.Encode()
	desc := r.Description
	if desc == "" {
		desc = defaultDescription(r.Kind)
	}
	ann := map[string]string{
		"summary":     summary(r, s, threshold),
		"description": desc,
		"value":       formatValue(r, s.value),
		"threshold":   formatValue(r, threshold),
	}
	if len(s.examples) > 0 {
		ann["example_runs"] = strings.Join(s.examples, ",")
	}
	if r.RunbookURL != "" {
		ann["runbook_url"] = r.RunbookURL
	}
	in.Annotations = ann
}

// step moves an instance through its states.
func (e *Evaluator) step(in *instance, cond bool, hold time.Duration, now time.Time) {
	switch {
	case cond && (in.State == "" || in.State == StateInactive || in.State == StateResolved):
		in.State, in.ActiveAt = StatePending, now
		in.FiredAt, in.ResolvedAt, in.LastSentAt, in.ResolvedSent = time.Time{}, time.Time{}, time.Time{}, false
		if hold <= 0 {
			in.State, in.FiredAt = StateFiring, now
		}
	case cond && in.State == StatePending && now.Sub(in.ActiveAt) >= hold:
		in.State, in.FiredAt = StateFiring, now
	case !cond && in.State == StatePending:
		in.State = StateInactive
	case !cond && in.State == StateFiring:
		in.State, in.ResolvedAt = StateResolved, now
		e.record(in)
	}
	if in.State == StateFiring && in.FiredAt.Equal(now) {
		in.FiredValue, in.FiredSummary = in.Value, in.Annotations["summary"]
	}
}

// prune forgets inactive instances and resolved ones past retention.
func (e *Evaluator) prune(now time.Time) {
	for key, in := range e.instances {
		if in.State == StateInactive || (in.State == StateResolved && in.ResolvedSent &&
			now.Sub(in.ResolvedAt) > e.cfg.ResolvedRetention) {
			delete(e.instances, key)
		}
	}
}

func (e *Evaluator) countStates() {
	e.metrics.alerts.Reset()
	for _, in := range e.instances {
		if in.State == StatePending || in.State == StateFiring {
			e.metrics.alerts.WithLabelValues(in.Rule, string(in.State)).Inc()
		}
	}
}

// due collects the notifications to send now: alerts that fired and were
// not sent within the resend interval, and resolutions not yet sent. Like
// Prometheus, a firing alert's endsAt lies 4 intervals ahead, so that
// Alertmanager resolves it by itself if tally stops re-sending.
func (e *Evaluator) due(now time.Time) []Notification {
	validFor := 4 * max(e.cfg.ResendInterval, e.cfg.Interval)
	var out []Notification
	keys := make([]string, 0, len(e.instances))
	for k := range e.instances {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		in := e.instances[k]
		n := Notification{Labels: in.Labels, Annotations: in.Annotations, StartsAt: in.FiredAt,
			GeneratorURL: in.GeneratorURL, Value: in.Value, Threshold: in.Threshold, Samples: in.Samples,
			ExampleRunIDs: in.ExampleRunIDs}
		switch {
		case in.State == StateFiring && (in.LastSentAt.IsZero() || now.Sub(in.LastSentAt) >= e.cfg.ResendInterval):
			n.Status, n.EndsAt = StateFiring, now.Add(validFor)
			in.LastSentAt = now
		case in.State == StateResolved && !in.ResolvedSent && !in.FiredAt.IsZero():
			n.Status, n.EndsAt = StateResolved, in.ResolvedAt
			in.ResolvedSent = true
		default:
			continue
		}
		if len(e.dispatchers) > 0 {
			out = append(out, n)
		}
	}
	return out
}

// Alerts lists a project's pending, firing and recently resolved alerts:
// firing first, then pending, then resolved, newest first within each.
func (e *Evaluator) Alerts(project string) []Status {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := []Status{}
	for _, in := range e.instances {
		if in.Project != project || in.State == StateInactive {
			continue
		}
		s := in.Status
		s.ExampleRunIDs = append([]string{}, in.ExampleRunIDs...)
		out = append(out, s)
	}
	rank := map[State]int{StateFiring: 0, StatePending: 1, StateResolved: 2}
	sort.Slice(out, func(a, b int) bool {
		if rank[out[a].State] != rank[out[b].State] {
			return rank[out[a].State] < rank[out[b].State]
		}
		ta, tb := out[a].ActiveAt, out[b].ActiveAt
		if !ta.Equal(tb) {
			return ta.After(tb)
		}
		return instanceKey(out[a].Rule, out[a].Project, out[a].Labels) < instanceKey(out[b].Rule, out[b].Project, out[b].Labels)
	})
	return out
}

// CheckResult is one subject's measurement in a one-off check.
type CheckResult struct {
	Rule       string            `json:"rule"`
	Kind       Kind              `json:"kind"`
	Project    string            `json:"project"`
	Subject    map[string]string `json:"subject"`
	Value      float64           `json:"value"`
	Threshold  float64           `json:"threshold"`
	Samples    int               `json:"samples"`
	MinSamples int               `json:"min_samples"`
	// Firing: the condition holds now (`for` is not waited for).
	Firing        bool     `json:"firing"`
	Summary       string   `json:"summary"`
	ExampleRunIDs []string `json:"example_run_ids"`
}

// Rules returns a copy of the loaded rules, in file order.
func (e *Evaluator) Rules() []Rule {
	return append([]Rule(nil), e.cfg.Rules...)
}

// Check evaluates every rule once, without state, `for` or delivery. A
// non-zero window replaces every rule's window. Projects limits the check
// to those projects; empty means the configured ones (or every project
// with recent spans). Results are sorted: firing first, then by rule,
// project and subject.
func (e *Evaluator) Check(ctx context.Context, window time.Duration, projects []string) ([]CheckResult, error) {
	now := e.cfg.Now().UTC()
	rules := e.cfg.Rules
	if window > 0 {
		rules = make([]Rule, len(e.cfg.Rules))
		copy(rules, e.cfg.Rules)
		for i := range rules {
			rules[i].Window = Duration(window)
		}
	}
	if len(projects) == 0 {
		var err error
		if projects, err = e.projects(ctx, now, rules); err != nil {
			return nil, fmt.Errorf("check alerts: %w", err)
		}
	}
	c := &cycle{src: e.cfg.Source, gate: e.cfg.Gate, now: now, tools: map[string][]query.ToolStats{}, models: map[string][]query.ModelStats{}}
	out := []CheckResult{}
	for _, p := range projects {
		for i := range rules {
			r := &rules[i]
			samples, err := e.measure(ctx, c, r, p, time.Duration(r.Window))
			if err != nil {
				return nil, fmt.Errorf("check rule %s, project %s: %w", r.Name, p, err)
			}
			for _, s := range samples {
				threshold, minSamples, enabled := r.settingsFor(s.subject)
				if !enabled {
					continue
				}
				out = append(out, CheckResult{Rule: r.Name, Kind: r.Kind, Project: p, Subject: s.subject,
					Value: s.value, Threshold: threshold, Samples: s.samples, MinSamples: minSamples,
					Firing: s.cond(s.value, threshold, s.samples, minSamples), Summary: summary(r, s, threshold),
					ExampleRunIDs: s.examples})
			}
		}
	}
	sort.SliceStable(out, func(a, b int) bool {
		if out[a].Firing != out[b].Firing {
			return out[a].Firing
		}
		if out[a].Rule != out[b].Rule {
			return out[a].Rule < out[b].Rule
		}
		if out[a].Project != out[b].Project {
			return out[a].Project < out[b].Project
		}
		return SubjectString(out[a].Subject) < SubjectString(out[b].Subject)
	})
	return out, nil
}

// SubjectString renders subject labels as "agent=a model=m", sorted.
func SubjectString(subject map[string]string) string {
	keys := make([]string, 0, len(subject))
	for k := range subject {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + subject[k]
	}
	return strings.Join(parts, " ")
}

// summary is the one-line annotation: subject, measured value, threshold.
func summary(r *Rule, s sample, threshold float64) string {
	v, t := formatValue(r, s.value), formatValue(r, threshold)
	spec, ok := specOf(r.Kind)
	if !ok {
		return fmt.Sprintf("%s %s: %s vs %s", r.Name, SubjectString(s.subject), v, t)
	}
	return spec.summary(r, s, v, compareOp(s.cond(s.value, threshold, max(s.samples, 1), 0), spec.inclusive), t)
}

// compareOp is how a value compares with its threshold in a summary: ">"
// or "≥" (inclusive kinds) when the condition holds, "≤" or "<" when not,
// so a rule that is fine never reads as breached.
func compareOp(holds, inclusive bool) string {
	switch {
	case holds && inclusive:
		return "≥"
	case holds:
		return ">"
	case inclusive:
		return "<"
	}
	return "≤"
}

// FormatThreshold renders a rule's threshold in the unit of its kind
// ("10.0%", "30000 ms", "$0.50"); "-" for cache_read_zero, which has none.
func FormatThreshold(r *Rule) string {
	if r.Kind == KindCacheReadZero {
		return "-"
	}
	return formatValue(r, r.Threshold)
}

// formatValue renders a value in the unit of the rule's kind.
func formatValue(r *Rule, v float64) string {
	if spec, ok := specOf(r.Kind); ok {
		return spec.format(v)
	}
	return formatPlain(v)
}

func defaultDescription(k Kind) string {
	spec, _ := specOf(k)
	return spec.description
}
