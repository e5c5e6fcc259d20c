package alerts

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// Notification is one alert as delivered: firing (EndsAt in the future, so
// Alertmanager resolves it by itself if tally stops re-sending) or resolved
// (EndsAt = when it resolved).
type Notification struct {
	Status        State             `json:"status"` // StateFiring or StateResolved
	Labels        map[string]string `json:"labels"`
	Annotations   map[string]string `json:"annotations"`
	StartsAt      time.Time         `json:"startsAt"`
	EndsAt        time.Time         `json:"endsAt"`
	GeneratorURL  string            `json:"generatorURL,omitempty"`
	Value         float64           `json:"value"`
	Threshold     float64           `json:"threshold"`
	Samples       int               `json:"samples"`
	ExampleRunIDs []string          `json:"exampleRunIds"`
}

// Target receives batches of notifications.
type Target interface {
	// Name identifies the target in metrics and logs.
	Name() string
	// Send delivers one batch; an error means it should be retried.
	Send(ctx context.Context, batch []Notification) error
}

// Alertmanager delivers to an Alertmanager's v2 API.
type Alertmanager struct {
	url    string
	client *http.Client
}

// NewAlertmanager returns a target posting to baseURL + "/api/v2/alerts"
// (baseURL is the Alertmanager's address, e.g. http://alertmanager:9093).
// A nil client uses one with a 10 s timeout.
func NewAlertmanager(baseURL string, client *http.Client) *Alertmanager {
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	u := strings.TrimRight(baseURL, "/")
	if !strings.HasSuffix(u, "/api/v2/alerts") {
		u += "/api/v2/alerts"
	}
	return &Alertmanager{url: u, client: client}
}

// Name is the Alertmanager's alerts URL.
func (a *Alertmanager) Name() string { return a.url }

// amAlert is postableAlert of Alertmanager's v2 API.
type amAlert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL,omitempty"`
}

// Send posts the batch as a JSON array of alerts.
func (a *Alertmanager) Send(ctx context.Context, batch []Notification) error {
	out := make([]amAlert, len(batch))
	for i, n := range batch {
		out[i] = amAlert{Labels: n.Labels, Annotations: n.Annotations, StartsAt: n.StartsAt.UTC(),
			EndsAt: n.EndsAt.UTC(), GeneratorURL: n.GeneratorURL}
	}
	return postJSON(ctx, a.client, a.url, out)
}

// Webhook delivers to a generic JSON webhook: a POST of
// {"source": "tally", "alerts": [Notification…]}.
type Webhook struct {
	url    string
	client *http.Client
}

// NewWebhook returns a webhook target. A nil client uses one with a 10 s
// timeout.
func NewWebhook(url string, client *http.Client) *Webhook {
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	return &Webhook{url: url, client: client}
}

// Name is the webhook's URL.
func (w *Webhook) Name() string { return w.url }

// WebhookPayload is the body a webhook target receives.
type WebhookPayload struct {
	Source string         `json:"source"`
	Alerts []Notification `json:"alerts"`
}

// Send posts the batch.
func (w *Webhook) Send(ctx context.Context, batch []Notification) error {
	return postJSON(ctx, w.client, w.url, WebhookPayload{Source: "tally", Alerts: batch})
}

func postJSON(ctx context.Context, client *http.Client, url string, body any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("encode alerts: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("post alerts to %s: %w", url, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("post alerts to %s: %w", url, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("post alerts to %s: %s: %s", url, resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}

// dispatcher owns one target's bounded queue and delivers batches from it in
// order, retrying failures with exponential backoff. Enqueueing never blocks:
// when the queue is full the batch is dropped (and counted); firing alerts
// are re-sent every resend interval, so a drop heals.
type dispatcher struct {
	target      Target
	queue       chan []Notification
	backoff     time.Duration // first retry delay; doubles up to maxBackoff
	maxBackoff  time.Duration
	maxAttempts int
	metrics     *metrics
	log         *slog.Logger
}

func (d *dispatcher) enqueue(batch []Notification) bool {
	select {
	case d.queue <- batch:
		d.metrics.queueLength(d.target.Name(), len(d.queue))
		return true
	default:
		d.metrics.notificationDropped(d.target.Name())
		d.log.Error("alert queue full, batch dropped", "target", d.target.Name(), "alerts", len(batch))
		return false
	}
}

func (d *dispatcher) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case batch := <-d.queue:
			d.metrics.queueLength(d.target.Name(), len(d.queue))
			d.deliver(ctx, batch)
		}
	}
}

func (d *dispatcher) deliver(ctx context.Context, batch []Notification) {
	delay := d.backoff
	for attempt := 1; ; attempt++ {
		sendCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := d.target.Send(sendCtx, batch)
		cancel()
		if err == nil {
			d.metrics.notificationsSent(d.target.Name(), len(batch))
			return
		}
		d.metrics.notificationFailed(d.target.Name())
		if attempt >= d.maxAttempts || ctx.Err() != nil {
			d.metrics.notificationDropped(d.target.Name())
			d.log.Error("alert delivery failed, giving up", "target", d.target.Name(), "attempts", attempt,
				"alerts", len(batch), "err", err)
			return
		}
		d.log.Warn("alert delivery failed, will retry", "target", d.target.Name(), "attempt", attempt,
			"retry_in", delay, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(delay*2, d.maxBackoff)
	}
}
