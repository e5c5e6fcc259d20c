package alerts

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// State is where an alert instance is in its life.
type State string

// Alert states. An instance is created pending when its condition first
// holds, fires once it has held for the rule's `for`, and is resolved when it
// stops holding; a pending instance whose condition stops holding is dropped
// (inactive).
const (
	StateInactive State = "inactive"
	StatePending  State = "pending"
	StateFiring   State = "firing"
	StateResolved State = "resolved"
)

// Status is one alert instance (a rule × project × subject): its state,
// latest measured value and what was or will be sent for it.
type Status struct {
	Rule    string `json:"rule"`
	Kind    Kind   `json:"kind"`
	Project string `json:"project"`
	State   State  `json:"state"`
	// Labels are exactly the labels delivered: alertname, project, severity,
	// the subject (tool, model, agent) and the rule's labels.
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	// Value is the latest measurement, in the unit of the rule's threshold.
	Value         float64  `json:"value"`
	Threshold     float64  `json:"threshold"`
	Samples       int      `json:"samples"`
	ExampleRunIDs []string `json:"example_run_ids"`
	GeneratorURL  string   `json:"generator_url,omitempty"`
	// ActiveAt is when the condition started holding; FiredAt when the alert
	// fired; ResolvedAt when it stopped holding after firing.
	ActiveAt   time.Time `json:"active_at"`
	FiredAt    time.Time `json:"fired_at,omitzero"`
	ResolvedAt time.Time `json:"resolved_at,omitzero"`
	// LastSentAt is when a firing notification was last queued; ResolvedSent
	// whether the resolution was queued.
	LastSentAt   time.Time `json:"last_sent_at,omitzero"`
	ResolvedSent bool      `json:"resolved_sent,omitempty"`
	// FiredValue and FiredSummary are the measurement and summary when the
	// alert fired, for its history (Episode).
	FiredValue   float64 `json:"fired_value,omitempty"`
	FiredSummary string  `json:"fired_summary,omitempty"`
}

// instanceKey identifies an alert instance: rule, project and subject labels.
func instanceKey(rule, project string, subject map[string]string) string {
	keys := make([]string, 0, len(subject))
	for k := range subject {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(rule)
	b.WriteByte(0)
	b.WriteString(project)
	for _, k := range keys {
		b.WriteByte(0)
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(subject[k])
	}
	return b.String()
}

// stateFile is the JSON document alert state is saved in.
type stateFile struct {
	Version int      `json:"version"`
	Alerts  []Status `json:"alerts"`
	// Subjects holds each alert's subject labels, parallel to Alerts.
	Subjects []map[string]string `json:"subjects"`
	// History holds the resolved episodes kept (Evaluator.History).
	History []Episode `json:"history,omitempty"`
}

// loadState reads saved alert instances keyed by instance key, and the
// history. A missing file is an empty state.
func loadState(path string) (map[string]*instance, []Episode, error) {
	out := map[string]*instance{}
	if path == "" {
		return out, nil, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read alert state: %w", err)
	}
	var f stateFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, nil, fmt.Errorf("alert state %s: %w", path, err)
	}
	if f.Version != 1 || len(f.Subjects) != len(f.Alerts) {
		return nil, nil, fmt.Errorf("alert state %s: unknown version %d", path, f.Version)
	}
	for i := range f.Alerts {
		in := &instance{Status: f.Alerts[i], subject: f.Subjects[i]}
		out[instanceKey(in.Rule, in.Project, in.subject)] = in
	}
	return out, f.History, nil
}

// saveState writes the instances and the history atomically (temporary
// file, then rename).
func saveState(path string, instances map[string]*instance, history []Episode) error {
	if path == "" {
		return nil
	}
	keys := make([]string, 0, len(instances))
	for k := range instances {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	f := stateFile{Version: 1, Alerts: []Status{}, Subjects: []map[string]string{}, History: history}
	for _, k := range keys {
		f.Alerts = append(f.Alerts, instances[k].Status)
		f.Subjects = append(f.Subjects, instances[k].subject)
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("encode alert state: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("save alert state: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".alerts-state-*")
	if err != nil {
		return fmt.Errorf("save alert state: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("save alert state: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("save alert state: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("save alert state: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("save alert state: %w", err)
	}
	return nil
}

// instance is an alert instance with its subject labels.
type instance struct {
	Status
	subject map[string]string
}
