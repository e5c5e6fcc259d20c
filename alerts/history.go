package alerts

import (
	"maps"
	"sort"
	"time"
)

// Episode is one firing of an alert instance, from when it fired to when it
// resolved: the alert history the API, UI and CLI list after the instance
// itself is gone (resolved instances stay listed for Config.ResolvedRetention
// only). An episode still firing has no ResolvedAt.
type Episode struct {
	Rule     string            `json:"rule"`
	Kind     Kind              `json:"kind"`
	Project  string            `json:"project"`
	Severity string            `json:"severity,omitempty"`
	Labels   map[string]string `json:"labels"`
	// Summary is the alert's summary when it fired.
	Summary string `json:"summary,omitempty"`
	// FiredValue is the measurement when it fired, in the unit of
	// Threshold; Value the latest one (at resolution, once resolved).
	FiredValue float64   `json:"fired_value"`
	Value      float64   `json:"value"`
	Threshold  float64   `json:"threshold"`
	FiredAt    time.Time `json:"fired_at"`
	ResolvedAt time.Time `json:"resolved_at,omitzero"`
	// DurationS is how long it fired, in seconds (until now while firing).
	DurationS float64 `json:"duration_s"`
}

// episodeOf is the episode of an instance that fired.
func episodeOf(in *instance) Episode {
	return Episode{Rule: in.Rule, Kind: in.Kind, Project: in.Project, Severity: in.Labels["severity"],
		Labels: maps.Clone(in.Labels), Summary: in.FiredSummary, FiredValue: in.FiredValue, Value: in.Value,
		Threshold: in.Threshold, FiredAt: in.FiredAt, ResolvedAt: in.ResolvedAt}
}

// record keeps the episode of an instance that just resolved; Evaluate
// prunes the history once per evaluation (pruneHistory).
func (e *Evaluator) record(in *instance) {
	if !in.FiredAt.IsZero() {
		e.history = append(e.history, episodeOf(in))
	}
}

// pruneHistory drops episodes resolved longer ago than HistoryRetention,
// and the oldest beyond MaxHistory.
func (e *Evaluator) pruneHistory(now time.Time) {
	kept := e.history[:0]
	for _, ep := range e.history {
		if now.Sub(ep.ResolvedAt) <= e.cfg.HistoryRetention {
			kept = append(kept, ep)
		}
	}
	if over := len(kept) - e.cfg.MaxHistory; over > 0 {
		kept = kept[:copy(kept, kept[over:])]
	}
	clear(e.history[len(kept):])
	e.history = kept
}

// History lists a project's alert episodes that overlap [since, until): the
// resolved ones kept (HistoryRetention, MaxHistory) and those firing now,
// newest first. rule, when not empty, keeps that rule's only.
func (e *Evaluator) History(project, rule string, since, until time.Time) []Episode {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.cfg.Now().UTC()
	out := []Episode{}
	keep := func(ep Episode) {
		end := ep.ResolvedAt
		if end.IsZero() {
			end = now
		}
		if ep.Project != project || (rule != "" && ep.Rule != rule) || !ep.FiredAt.Before(until) || end.Before(since) {
			return
		}
		ep.DurationS = end.Sub(ep.FiredAt).Seconds()
		out = append(out, ep)
	}
	for _, ep := range e.history {
		keep(ep)
	}
	for _, in := range e.instances {
		if in.State == StateFiring {
			keep(episodeOf(in))
		}
	}
	sort.SliceStable(out, func(a, b int) bool {
		if !out[a].FiredAt.Equal(out[b].FiredAt) {
			return out[a].FiredAt.After(out[b].FiredAt)
		}
		return instanceKey(out[a].Rule, out[a].Project, out[a].Labels) < instanceKey(out[b].Rule, out[b].Project, out[b].Labels)
	})
	return out
}
