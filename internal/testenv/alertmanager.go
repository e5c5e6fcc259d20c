package testenv

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"gopkg.in/yaml.v3"
)

const (
	// alertmanagerBinary is where Debian's prometheus-alertmanager installs it.
	alertmanagerBinary = "/usr/bin/prometheus-alertmanager"
	// alertmanagerReadyTimeout bounds how long Alertmanager may take to be ready.
	alertmanagerReadyTimeout = 30 * time.Second
)

// AlertmanagerOptions configures the single route of a test Alertmanager.
// Zero fields take the defaults given on each.
type AlertmanagerOptions struct {
	// WebhookURL receives every alert (a webhook receiver, send_resolved on).
	WebhookURL string
	// GroupBy lists the labels alerts are grouped by. Default ["..."]: every
	// distinct label set is its own group, so each alert is notified alone.
	GroupBy []string
	// GroupWait is how long a new group waits before its first notification.
	// Default 1s.
	GroupWait time.Duration
	// GroupInterval is how long a group waits before notifying changes.
	// Default 1s.
	GroupInterval time.Duration
	// RepeatInterval is how long before an unchanged group is notified again.
	// Default 1h.
	RepeatInterval time.Duration
}

// withDefaults fills the zero fields.
func (o AlertmanagerOptions) withDefaults() AlertmanagerOptions {
	if o.GroupBy == nil {
		o.GroupBy = []string{"..."}
	}
	if o.GroupWait == 0 {
		o.GroupWait = time.Second
	}
	if o.GroupInterval == 0 {
		o.GroupInterval = time.Second
	}
	if o.RepeatInterval == 0 {
		o.RepeatInterval = time.Hour
	}
	return o
}

// alertmanagerConfig renders the Alertmanager configuration file.
func alertmanagerConfig(o AlertmanagerOptions) ([]byte, error) {
	type webhook struct {
		URL          string `yaml:"url"`
		SendResolved bool   `yaml:"send_resolved"`
	}
	type receiver struct {
		Name           string    `yaml:"name"`
		WebhookConfigs []webhook `yaml:"webhook_configs"`
	}
	type route struct {
		Receiver       string   `yaml:"receiver"`
		GroupBy        []string `yaml:"group_by"`
		GroupWait      string   `yaml:"group_wait"`
		GroupInterval  string   `yaml:"group_interval"`
		RepeatInterval string   `yaml:"repeat_interval"`
	}
	type config struct {
		Route     route      `yaml:"route"`
		Receivers []receiver `yaml:"receivers"`
	}
	data, err := yaml.Marshal(config{
		Route: route{
			Receiver:       "test",
			GroupBy:        o.GroupBy,
			GroupWait:      model.Duration(o.GroupWait).String(),
			GroupInterval:  model.Duration(o.GroupInterval).String(),
			RepeatInterval: model.Duration(o.RepeatInterval).String(),
		},
		Receivers: []receiver{{
			Name:           "test",
			WebhookConfigs: []webhook{{URL: o.WebhookURL, SendResolved: true}},
		}},
	})
	if err != nil {
		return nil, fmt.Errorf("render Alertmanager config: %w", err)
	}
	return data, nil
}

// Alertmanager starts an Alertmanager that sends every alert to webhookURL
// (group_wait 1s, group_interval 1s, repeat_interval 1h) and stops it when the
// test ends. It returns the base URL of its API, e.g. http://127.0.0.1:41234;
// alerts are posted to apiURL + "/api/v2/alerts".
func Alertmanager(t testing.TB, webhookURL string) (apiURL string) {
	t.Helper()
	return StartAlertmanager(t, AlertmanagerOptions{WebhookURL: webhookURL})
}

// StartAlertmanager is Alertmanager with every routing option settable.
func StartAlertmanager(t testing.TB, opts AlertmanagerOptions) (apiURL string) {
	t.Helper()
	if firstExecutable(alertmanagerBinary) == "" {
		t.Fatalf("testenv: no %s; "+installHint, alertmanagerBinary, "prometheus-alertmanager")
	}
	if opts.WebhookURL == "" {
		t.Fatalf("testenv: Alertmanager needs a webhook URL")
	}
	config, err := alertmanagerConfig(opts.withDefaults())
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	dir := t.TempDir()
	configPath := filepath.Join(dir, "am.yml")
	if err := os.WriteFile(configPath, config, 0o644); err != nil {
		t.Fatalf("testenv: write Alertmanager config: %v", err)
	}
	var lastErr error
	for attempt := 0; attempt < startAttempts; attempt++ {
		url, proc, err := startAlertmanager(dir, configPath)
		if err == nil {
			t.Cleanup(func() {
				if err := proc.stop(syscall.SIGTERM, 10*time.Second); err != nil {
					t.Errorf("testenv: stop Alertmanager: %v", err)
				}
			})
			return url
		}
		lastErr = err
	}
	t.Fatalf("testenv: Alertmanager: %v", lastErr)
	return ""
}

// startAlertmanager runs Alertmanager on a free port with clustering off and
// waits until /-/ready answers 200.
func startAlertmanager(dir, configPath string) (string, *process, error) {
	port, err := freePort()
	if err != nil {
		return "", nil, err
	}
	address := "127.0.0.1:" + strconv.Itoa(port)
	logPath := filepath.Join(dir, "alertmanager.log")
	output, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return "", nil, fmt.Errorf("open Alertmanager log: %w", err)
	}
	defer output.Close()
	proc, err := startProcess(alertmanagerBinary, []string{
		"--config.file=" + configPath,
		"--storage.path=" + dir,
		"--web.listen-address=" + address,
		"--cluster.listen-address=",
	}, output)
	if err != nil {
		return "", nil, err
	}
	url := "http://" + address
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(alertmanagerReadyTimeout)
	for {
		err := alertmanagerReady(client, url)
		if err == nil {
			return url, proc, nil
		}
		if !proc.running() {
			return "", nil, fmt.Errorf("alertmanager exited during startup (%v); log:\n%s", proc.waitErr, tailFile(logPath, 2000))
		}
		if time.Now().After(deadline) {
			_ = proc.stop(syscall.SIGKILL, 0)
			return "", nil, fmt.Errorf("alertmanager at %s not ready after %s: %w; log:\n%s", url, alertmanagerReadyTimeout, err, tailFile(logPath, 2000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// alertmanagerReady asks /-/ready once.
func alertmanagerReady(client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url+"/-/ready", nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/-/ready answered %s", resp.Status)
	}
	return nil
}
