package retention

import (
	"context"
	"time"

	"github.com/tallyhq/tally/schema"
	"github.com/tallyhq/tally/support/diskguard"
)

// Storage answers GET /api/v1/storage: what is stored and kept — the
// tables' bytes on disk and the free space (the guard's last measure), the
// retention policy, the last run and what the next would do.
type Storage struct {
	Job   *Job             // nil: no retention configured
	Guard *diskguard.Guard // nil: no disk guard
	Parts *PartWatch       // nil: not watched
}

// PolicyView is a policy as the API and CLI show it ("forever" for 0).
type PolicyView struct {
	Spans    string                  `json:"spans"`
	Content  string                  `json:"content"`
	Rollups  string                  `json:"rollups"`
	Projects map[string]OverrideView `json:"projects"`
}

// OverrideView is one project's retention as shown.
type OverrideView struct {
	Spans   string `json:"spans"`
	Content string `json:"content"`
}

// View shows a policy.
func (p Policy) View() PolicyView {
	v := PolicyView{Spans: show(p.Spans), Content: show(p.Of(schema.ClassContent, "")), Rollups: show(p.Rollups),
		Projects: map[string]OverrideView{}}
	for name := range p.Projects {
		v.Projects[name] = OverrideView{Spans: show(p.Of(schema.ClassSpans, name)), Content: show(p.Of(schema.ClassContent, name))}
	}
	return v
}

// StorageReport is the answer of GET /api/v1/storage.
type StorageReport struct {
	Disk      *diskguard.Status `json:"disk,omitempty"`
	Retention *PolicyView       `json:"retention,omitempty"`
	LastRun   *Report           `json:"last_run,omitempty"`
	NextRun   *Report           `json:"next_run,omitempty"`
	// NextRunError says why the next run could not be previewed; the rest
	// of the report stands.
	NextRunError string `json:"next_run_error,omitempty"`
	// DetachedParts are the parts the engine set aside (see PartWatch).
	DetachedParts []schema.DetachedPart `json:"detached_parts,omitempty"`
}

// Storage reports; the next run is previewed now.
func (s *Storage) Storage(ctx context.Context) (any, error) {
	rep := &StorageReport{}
	if s.Parts != nil {
		rep.DetachedParts = s.Parts.Parts()
	}
	if s.Guard != nil {
		st := s.Guard.Status()
		rep.Disk = &st
	}
	if s.Job != nil {
		v := s.Job.policy.View()
		rep.Retention = &v
		if last := s.Job.Last(); !last.At.IsZero() {
			rep.LastRun = &last
		}
		if next, err := s.Job.Preview(ctx); err != nil {
			rep.NextRunError = err.Error()
		} else {
			rep.NextRun = &next
		}
	}
	return rep, nil
}

// KeptFrom is the oldest span start a project's spans are kept from at
// now (zero when kept forever), and its retention.
func (p Policy) KeptFrom(project string, now time.Time) (time.Time, time.Duration) {
	d := p.Of(schema.ClassSpans, project)
	if d == 0 {
		return time.Time{}, 0
	}
	return now.Add(-d), d
}

// SpansKeptFrom is the oldest span start every project's spans are still
// kept from at now — by the shortest spans retention — zero when all are
// kept forever: the rollup's hours before it are final.
func (p Policy) SpansKeptFrom(now time.Time) time.Time {
	shortest := p.Spans
	for name := range p.Projects {
		if d := p.Of(schema.ClassSpans, name); d != 0 && (shortest == 0 || d < shortest) {
			shortest = d
		}
	}
	if shortest == 0 {
		return time.Time{}
	}
	return now.Add(-shortest)
}
