package alerts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tallyhq/tally/query"
)

// MetricsSource is what the Exporter reads; *query.Reader implements it.
type MetricsSource interface {
	Projects(ctx context.Context, since time.Time) ([]string, error)
	Tools(ctx context.Context, f query.ToolFilter) ([]query.ToolStats, error)
	Models(ctx context.Context, w query.Window) ([]query.ModelStats, error)
	UsageByMinute(ctx context.Context, w query.Window) ([]query.UsageMinute, error)
	Signals(ctx context.Context, f query.SignalFilter) (*query.SignalsReport, error)
}

// ExporterConfig configures an Exporter. Zero fields take the defaults given.
type ExporterConfig struct {
	Source MetricsSource
	// Registerer receives the metrics; nil registers nothing.
	Registerer prometheus.Registerer
	// Window is the window of the gauges and how far back the counters pick
	// up late spans (default 15m).
	Window time.Duration
	// Interval between refreshes (default 1m).
	Interval time.Duration
	// MaxLabelValues caps distinct tool, model and agent label values
	// (default 200); more are counted under OtherLabel.
	MaxLabelValues int
	// Projects limits the projects exported; empty: every project with
	// spans in the window.
	Projects []string
	Logger   *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Gate, when set, gives the review of the window's runs (the signal
	// figures) its turn among the background loads.
	Gate Gate
}

// Exporter keeps tally's per-tool, per-model and per-agent figures on
// /metrics (tally_tool_*, tally_model_*, tally_cache_read_tokens_total,
// tally_cost_usd_total, tally_signals), refreshed from ClickHouse every interval. It is a
// component of its own, beside the evaluator: the figures are there whether
// or not alerting is on, on every replica.
type Exporter struct {
	cfg ExporterConfig
	g   *gauges
	mu  sync.Mutex // serializes refreshes (the counters' running totals)
}

// NewExporter registers the metrics.
func NewExporter(cfg ExporterConfig) (*Exporter, error) {
	if cfg.Source == nil {
		return nil, errors.New("alerts: no source for the metrics exporter")
	}
	setDefault(&cfg.Window, 15*time.Minute)
	setDefault(&cfg.Interval, time.Minute)
	if cfg.MaxLabelValues <= 0 {
		cfg.MaxLabelValues = 200
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	g, err := newGauges(cfg.Registerer, cfg.MaxLabelValues)
	if err != nil {
		return nil, err
	}
	return &Exporter{cfg: cfg, g: g}, nil
}

// Run refreshes the metrics every interval (the first time at once) until
// ctx ends; a failed refresh is logged and the figures stay as they were.
func (x *Exporter) Run(ctx context.Context) {
	t := time.NewTicker(x.cfg.Interval)
	defer t.Stop()
	for {
		if err := x.Refresh(ctx); err != nil && ctx.Err() == nil {
			x.cfg.Logger.Warn("metrics refresh failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// signals reviews project's runs of the window ending at now, in the
// gate's turn: the runs in flight are reviewed from their spans.
func (x *Exporter) signals(ctx context.Context, project string, now time.Time) (*query.SignalsReport, error) {
	release, err := enter(ctx, x.cfg.Gate, "metrics")
	if err != nil {
		return nil, err
	}
	defer release()
	return x.cfg.Source.Signals(ctx, query.SignalFilter{Project: project, Since: now.Add(-x.cfg.Window), Until: now})
}

// Refresh reads the window's figures and updates the metrics.
func (x *Exporter) Refresh(ctx context.Context) error {
	now := x.cfg.Now().UTC()
	projects := x.cfg.Projects
	if len(projects) == 0 {
		var err error
		if projects, err = x.cfg.Source.Projects(ctx, now.Add(-x.cfg.Window)); err != nil {
			return fmt.Errorf("metrics: projects: %w", err)
		}
	}
	type perProject struct {
		tools   []query.ToolStats
		models  []query.ModelStats
		usage   []query.UsageMinute
		signals *query.SignalsReport
	}
	w := func(p string) query.Window {
		return query.Window{Project: p, Since: now.Add(-x.cfg.Window), Until: now}
	}
	data := map[string]perProject{}
	var errs []error
	for _, p := range projects {
		var d perProject
		var err error
		if d.tools, err = x.cfg.Source.Tools(ctx, query.ToolFilter{Window: w(p), PerMinute: true}); err != nil {
			errs = append(errs, fmt.Errorf("tool metrics, project %s: %w", p, err))
		}
		if d.models, err = x.cfg.Source.Models(ctx, w(p)); err != nil {
			errs = append(errs, fmt.Errorf("model metrics, project %s: %w", p, err))
		}
		if d.usage, err = x.cfg.Source.UsageByMinute(ctx, w(p)); err != nil {
			errs = append(errs, fmt.Errorf("usage metrics, project %s: %w", p, err))
		}
		if d.signals, err = x.signals(ctx, p, now); err != nil {
			errs = append(errs, fmt.Errorf("signal metrics, project %s: %w", p, err))
		}
		data[p] = d
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	m := x.g
	m.toolRetryRatio.Reset()
	m.toolLatency.Reset()
	m.modelLatency.Reset()
	m.modelTTFC.Reset()
	m.signals.Reset()
	tool, agent := []string{"tool"}, []string{"agent", "model"}
	for _, p := range projects {
		d := data[p]
		for _, s := range d.tools {
			for _, mi := range s.PerMinute {
				m.addMinute(m.toolCalls, tool, p, mi.Minute, float64(mi.Calls), s.Tool)
				m.addMinute(m.toolErrors, tool, p, mi.Minute, float64(mi.Errors), s.Tool)
				m.addMinute(m.toolRetries, tool, p, mi.Minute, float64(mi.Retries), s.Tool)
			}
			name, ok := m.caps.capped("tool", s.Tool, m.overflow)
			if !ok {
				continue
			}
			m.toolRetryRatio.WithLabelValues(p, name).Set(s.RetryRate)
			for _, q := range quantiles {
				m.toolLatency.WithLabelValues(p, name, q.label).Set(q.pick(s.P50Ms, s.P95Ms, s.P99Ms) / 1000)
			}
		}
		for _, s := range d.models {
			name, ok := m.caps.capped("model", s.Model, m.overflow)
			if !ok {
				continue
			}
			for _, q := range quantiles {
				m.modelLatency.WithLabelValues(p, name, q.label).Set(q.pick(s.P50Ms, s.P95Ms, s.P99Ms) / 1000)
				if s.TTFCCalls > 0 {
					m.modelTTFC.WithLabelValues(p, name, q.label).Set(q.pick(s.TTFCP50Ms, s.TTFCP95Ms, s.TTFCP99Ms) / 1000)
				}
			}
		}
		if d.signals != nil {
			for _, g := range d.signals.Groups {
				if name, ok := m.caps.capped("tool", g.Tool, m.overflow); ok {
					m.signals.WithLabelValues(p, string(g.Kind), name).Add(float64(g.Signals))
				}
			}
			for _, mi := range d.signals.PerMinute {
				m.addMinute(m.signalsTotal, []string{"kind", "tool"}, p, mi.Minute, float64(mi.Signals), string(mi.Kind), mi.Tool)
			}
		}
		for _, u := range d.usage {
			m.addMinute(m.cacheRead, agent, p, u.Minute, float64(u.CacheReadTokens), u.Agent, u.Model)
			m.addMinute(m.cost, agent, p, u.Minute, u.CostUSD, u.Agent, u.Model)
		}
	}
	m.forgetBefore(now.Add(-x.cfg.Window).Truncate(time.Minute))
	return errors.Join(errs...)
}
