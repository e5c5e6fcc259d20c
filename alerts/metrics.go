package alerts

import (
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tallyhq/tally/safety"
)

// OtherLabel is the label value that tools, models and agents beyond the
// cardinality cap are counted under.
const OtherLabel = "__other__"

// quantiles are the latency quantiles exported as gauges.
var quantiles = []struct {
	label string
	pick  func(p50, p95, p99 float64) float64
}{
	{"0.5", func(p50, _, _ float64) float64 { return p50 }},
	{"0.95", func(_, p95, _ float64) float64 { return p95 }},
	{"0.99", func(_, _, p99 float64) float64 { return p99 }},
}

// metrics are the evaluator's own Prometheus metrics: how evaluation and
// delivery go.
type metrics struct {
	evalDuration                  prometheus.Histogram
	evalFailures                  prometheus.Counter
	alerts                        *prometheus.GaugeVec
	notifications, notifyFailures *prometheus.CounterVec
	notifyDropped                 *prometheus.CounterVec
	queue                         *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	}
	m := &metrics{
		evalDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "tally_alert_evaluation_duration_seconds",
			Help: "Time one alert evaluation cycle took.", Buckets: prometheus.ExponentialBuckets(0.01, 2, 14)}),
		evalFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "tally_alert_evaluation_failures_total",
			Help: "Rule evaluations that failed (a query error); the rule's alerts keep their state."}),
		alerts:         gauge("tally_alerts", "Alert instances by rule and state (pending, firing).", "alertname", "state"),
		notifications:  counter("tally_alert_notifications_total", "Alerts delivered to a target.", "target"),
		notifyFailures: counter("tally_alert_notification_failures_total", "Failed delivery attempts to a target.", "target"),
		notifyDropped:  counter("tally_alert_notifications_dropped_total", "Alert batches given up on (retries exhausted or queue full).", "target"),
		queue:          gauge("tally_alert_notification_queue_length", "Alert batches waiting for delivery.", "target"),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.evalDuration, m.evalFailures, m.alerts, m.notifications,
		m.notifyFailures, m.notifyDropped, m.queue} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register alert metrics: %w", err)
		}
	}
	return m, nil
}

// gauges are the figures the Exporter keeps on /metrics. Counters of calls,
// retries, errors, cache-read tokens and cost advance by what each refresh
// newly sees in its per-minute sums (so a span counts once however many
// refreshes see it); gauges hold the latest refresh's window figures.
type gauges struct {
	toolCalls, toolErrors, toolRetries *prometheus.CounterVec
	toolRetryRatio                     *prometheus.GaugeVec
	toolLatency                        *prometheus.GaugeVec
	modelLatency, modelTTFC            *prometheus.GaugeVec
	cacheRead, cost                    *prometheus.CounterVec
	overflow                           *prometheus.CounterVec
	signals                            *prometheus.GaugeVec
	signalsTotal                       *prometheus.CounterVec

	caps *labelCaps
	// totals holds the last seen per-minute sum of each counter series, to
	// add only what is new.
	totals map[minuteKey]float64
}

func newGauges(reg prometheus.Registerer, maxValues int) (*gauges, error) {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	}
	m := &gauges{
		toolCalls:      counter("tally_tool_calls_total", "Tool calls (tool spans) seen, by start minute.", "project", "tool"),
		toolErrors:     counter("tally_tool_errors_total", "Tool calls that ended in error.", "project", "tool"),
		toolRetries:    counter("tally_tool_retries_total", "Tool calls classified as retries (the retry definition of docs/design.md).", "project", "tool"),
		toolRetryRatio: gauge("tally_tool_retry_ratio", "Retried calls / all calls over the metrics window.", "project", "tool"),
		toolLatency:    gauge("tally_tool_latency_seconds", "Tool call duration quantiles over the metrics window.", "project", "tool", "quantile"),
		modelLatency:   gauge("tally_model_latency_seconds", "Inference call duration quantiles over the metrics window.", "project", "model", "quantile"),
		modelTTFC:      gauge("tally_model_ttfc_seconds", "Time-to-first-chunk quantiles of streamed inference calls over the metrics window.", "project", "model", "quantile"),
		cacheRead:      counter("tally_cache_read_tokens_total", "Input tokens read from the prompt cache.", "project", "agent", "model"),
		cost:           counter("tally_cost_usd_total", "Cost of spans in USD.", "project", "agent", "model"),
		overflow:       counter("tally_metric_label_overflow_total", "Distinct label values counted under __other__ because of the cardinality cap.", "label"),
		signals:        gauge("tally_signals", "Safety signals ("+strings.Join(safety.KindNames(), ", ")+") in the runs that started in the metrics window, by kind and tool.", "project", "kind", "tool"),
		signalsTotal:   counter("tally_signals_total", "Safety signals raised, by kind and tool (counted by their run's start minute, as the review of the metrics window finds them).", "project", "kind", "tool"),
		caps:           newLabelCaps(maxValues),
		totals:         map[minuteKey]float64{},
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.toolCalls, m.toolErrors, m.toolRetries, m.toolRetryRatio,
		m.toolLatency, m.modelLatency, m.modelTTFC, m.cacheRead, m.cost, m.overflow, m.signals, m.signalsTotal} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register tool and model metrics: %w", err)
		}
	}
	return m, nil
}

// minuteKey names one counter series' sum over one minute.
type minuteKey struct {
	counter *prometheus.CounterVec
	project string
	a, b    string // label values before capping
	minute  int64
}

// addMinute advances the counter by how much the minute's sum grew since the
// last evaluation saw it. Sums of past minutes only grow (late spans); a
// shrink (a classification changed by a late span) is ignored.
// names are the capped label names after "project", parallel to labels.
func (m *gauges) addMinute(c *prometheus.CounterVec, names []string, project string, minute time.Time, value float64, labels ...string) {
	k := minuteKey{counter: c, project: project, minute: minute.Unix()}
	k.a = labels[0]
	if len(labels) > 1 {
		k.b = labels[1]
	}
	values := []string{project}
	for i, l := range labels {
		values = append(values, m.caps.value(names[i], l, m.overflow))
	}
	series := c.WithLabelValues(values...) // exists from the first sighting, even at 0
	if delta := value - m.totals[k]; delta > 0 {
		m.totals[k] = value
		series.Add(delta)
	}
}

// forgetBefore drops the per-minute sums older than the metrics window.
func (m *gauges) forgetBefore(t time.Time) {
	for k := range m.totals {
		if k.minute < t.Unix() {
			delete(m.totals, k)
		}
	}
}

func (m *metrics) notificationsSent(target string, n int) {
	m.notifications.WithLabelValues(target).Add(float64(n))
}

func (m *metrics) notificationFailed(target string) { m.notifyFailures.WithLabelValues(target).Inc() }

func (m *metrics) notificationDropped(target string) { m.notifyDropped.WithLabelValues(target).Inc() }

func (m *metrics) queueLength(target string, n int) { m.queue.WithLabelValues(target).Set(float64(n)) }

// labelCaps bounds the distinct values of each capped label (tool, model,
// agent): the first max values are kept, later ones become OtherLabel.
type labelCaps struct {
	max        int
	known      map[string]map[string]bool
	overflowed map[string]map[string]bool
}

func newLabelCaps(max int) *labelCaps {
	return &labelCaps{max: max, known: map[string]map[string]bool{}, overflowed: map[string]map[string]bool{}}
}

// value returns v, or OtherLabel once the label has max distinct values;
// each distinct value sent to OtherLabel is counted once (up to 100·max
// values remembered, beyond which each occurrence counts).
func (c *labelCaps) value(label, v string, overflow *prometheus.CounterVec) string {
	known := c.known[label]
	if known == nil {
		known = map[string]bool{}
		c.known[label] = known
	}
	if known[v] {
		return v
	}
	if len(known) < c.max {
		known[v] = true
		return v
	}
	over := c.overflowed[label]
	if over == nil {
		over = map[string]bool{}
		c.overflowed[label] = over
	}
	if !over[v] {
		overflow.WithLabelValues(label).Inc()
		if len(over) < 100*c.max {
			over[v] = true
		}
	}
	return OtherLabel
}

// capped is value for gauges: overflowed subjects are left out, since
// quantiles of different tools cannot be merged into one series.
func (c *labelCaps) capped(label, v string, overflow *prometheus.CounterVec) (string, bool) {
	out := c.value(label, v, overflow)
	return out, out != OtherLabel
}
