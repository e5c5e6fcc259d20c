package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// webhookMessage is the part of Alertmanager's webhook payload the test reads.
type webhookMessage struct {
	Status string `json:"status"`
	Alerts []struct {
		Status      string            `json:"status"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"alerts"`
}

// TestAlertmanagerForwardsToWebhook posts one alert to Alertmanager's API and
// expects the webhook receiver to get it.
func TestAlertmanagerForwardsToWebhook(t *testing.T) {
	received := make(chan webhookMessage, 10)
	webhook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var msg webhookMessage
		if err := json.NewDecoder(r.Body).Decode(&msg); err != nil {
			t.Errorf("decode webhook body: %v", err)
		}
		received <- msg
	}))
	defer webhook.Close()

	apiURL := Alertmanager(t, webhook.URL)

	alert := `[{
		"labels": {"alertname": "ToolRetryRateHigh", "tool": "search"},
		"annotations": {"summary": "search retries 40% of calls"},
		"startsAt": "` + time.Now().UTC().Format(time.RFC3339) + `"
	}]`
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, apiURL+"/api/v2/alerts", strings.NewReader(alert))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("post alert: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("post alert: %s: %s", resp.Status, bytes.TrimSpace(body))
	}

	// A generous bound on delivery (group_wait is 1s), not a timing assertion.
	var msg webhookMessage
	select {
	case msg = <-received:
	case <-time.After(60 * time.Second):
		t.Fatal("the webhook received nothing within 60s")
	}
	if msg.Status != "firing" || len(msg.Alerts) != 1 {
		t.Fatalf("webhook message = %+v, want one firing alert", msg)
	}
	got := msg.Alerts[0]
	if got.Labels["alertname"] != "ToolRetryRateHigh" || got.Labels["tool"] != "search" {
		t.Errorf("alert labels = %v, want alertname=ToolRetryRateHigh tool=search", got.Labels)
	}
	if got.Annotations["summary"] != "search retries 40% of calls" {
		t.Errorf("alert summary = %q, want %q", got.Annotations["summary"], "search retries 40% of calls")
	}
}

func TestAlertmanagerConfig(t *testing.T) {
	config, err := alertmanagerConfig(AlertmanagerOptions{WebhookURL: "http://127.0.0.1:1/hook"}.withDefaults())
	if err != nil {
		t.Fatal(err)
	}
	want := `route:
    receiver: test
    group_by:
        - '...'
    group_wait: 1s
    group_interval: 1s
    repeat_interval: 1h
receivers:
    - name: test
      webhook_configs:
        - url: http://127.0.0.1:1/hook
          send_resolved: true
`
	if string(config) != want {
		t.Errorf("config =\n%s\nwant\n%s", config, want)
	}
}
