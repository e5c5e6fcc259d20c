package retention

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tallyhq/tally/schema"
)

// Store is what the job reads and changes; *schema.Store implements it.
type Store interface {
	Partitions(ctx context.Context) ([]schema.Partition, error)
	DropPartition(ctx context.Context, table, id string) error
	DeleteAged(ctx context.Context, a schema.AgedRows) error
	CountAged(ctx context.Context, a schema.AgedRows) (uint64, error)
	PendingMutations(ctx context.Context, table string) (uint64, error)
}

// DefaultInterval is how often the job runs after its start-up run.
const DefaultInterval = time.Hour

// Job applies a policy at start-up and every interval.
type Job struct {
	store    Store
	policy   Policy
	interval time.Duration
	now      func() time.Time
	log      *slog.Logger

	mu   sync.Mutex
	last Report

	dropped, deleted, failures prometheus.Counter
	lastRun                    prometheus.Gauge
}

// Config configures a Job; zero fields take the defaults named.
type Config struct {
	Policy   Policy
	Interval time.Duration    // DefaultInterval
	Now      func() time.Time // time.Now
	Logger   *slog.Logger
	// Registerer receives tally_retention_partitions_dropped_total,
	// tally_retention_rows_deleted_total, tally_retention_failures_total
	// and tally_retention_last_run_timestamp_seconds; nil: none.
	Registerer prometheus.Registerer
}

// NewJob returns a job applying cfg.Policy to store.
func NewJob(store Store, cfg Config) (*Job, error) {
	if err := cfg.Policy.Validate(); err != nil {
		return nil, err
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	j := &Job{store: store, policy: cfg.Policy, interval: cfg.Interval, now: cfg.Now, log: cfg.Logger,
		dropped:  prometheus.NewCounter(prometheus.CounterOpts{Name: "tally_retention_partitions_dropped_total", Help: "Partitions retention dropped."}),
		deleted:  prometheus.NewCounter(prometheus.CounterOpts{Name: "tally_retention_rows_deleted_total", Help: "Rows retention deleted for projects kept shorter."}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{Name: "tally_retention_failures_total", Help: "Retention runs that failed in part."}),
		lastRun:  prometheus.NewGauge(prometheus.GaugeOpts{Name: "tally_retention_last_run_timestamp_seconds", Help: "When retention last ran to the end."}),
	}
	if cfg.Registerer != nil {
		for _, c := range []prometheus.Collector{j.dropped, j.deleted, j.failures, j.lastRun} {
			if err := cfg.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("retention metrics: %w", err)
			}
		}
	}
	return j, nil
}

// Policy is the policy the job applies.
func (j *Job) Policy() Policy { return j.policy }

// Report is what one run did (or, from Preview, would do).
type Report struct {
	At      time.Time `json:"at"`
	Actions []Action  `json:"actions"`
	Dropped int       `json:"partitions_dropped"`
	Deleted uint64    `json:"rows_deleted"`
	Error   string    `json:"error,omitempty"`
}

// Preview plans a run at now without acting: the partitions it would drop
// and, counted, the rows it would delete.
func (j *Job) Preview(ctx context.Context) (Report, error) {
	return j.run(ctx, false)
}

// RunOnce applies the policy now.
func (j *Job) RunOnce(ctx context.Context) (Report, error) {
	rep, err := j.run(ctx, true)
	j.mu.Lock()
	j.last = rep
	j.mu.Unlock()
	j.dropped.Add(float64(rep.Dropped))
	j.deleted.Add(float64(rep.Deleted))
	if err != nil {
		j.failures.Inc()
	} else {
		j.lastRun.Set(float64(rep.At.Unix()))
	}
	return rep, err
}

// Last is the report of the last run (zero before the first).
func (j *Job) Last() Report {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.last
}

func (j *Job) run(ctx context.Context, act bool) (Report, error) {
	now := j.now().UTC()
	rep := Report{At: now, Actions: []Action{}}
	parts, err := j.store.Partitions(ctx)
	if err != nil {
		rep.Error = err.Error()
		return rep, err
	}
	tables := map[string]schema.RetainedTable{}
	for _, t := range schema.RetainedTables() {
		tables[t.Name] = t
	}
	var errs []error
	for _, a := range Plan(j.policy, now, parts) {
		switch a.Kind {
		case "drop":
			if act {
				j.log.Warn("retention: dropping a partition past retention", "table", a.Table, "partition", a.Partition, "rows", a.Rows, "bytes", a.Bytes)
				if err := j.store.DropPartition(ctx, a.Table, a.Partition); err != nil {
					errs = append(errs, err)
					continue
				}
				rep.Dropped++
			}
		case "delete":
			sel := schema.AgedRows{Table: tables[a.Table], From: a.From, Before: a.Before, Projects: a.Projects, Except: a.Except}
			n, err := j.store.CountAged(ctx, sel)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if n == 0 {
				continue
			}
			a.Rows = n
			if act {
				// A delete the server is still applying: its rows are
				// counted again, so wait for it rather than issue another.
				pending, err := j.store.PendingMutations(ctx, a.Table)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				if pending > 0 {
					j.log.Info("retention: a delete is still being applied; next run", "table", a.Table, "pending", pending)
					continue
				}
				if err := j.store.DeleteAged(ctx, sel); err != nil {
					errs = append(errs, err)
					continue
				}
				rep.Deleted += n
				j.log.Info("retention: deleting rows", "table", a.Table, "before", a.Before, "projects", a.Projects, "except", a.Except, "rows", n)
			}
		}
		rep.Actions = append(rep.Actions, a)
	}
	if err := errors.Join(errs...); err != nil {
		rep.Error = err.Error()
		return rep, err
	}
	return rep, nil
}

// Run applies the policy at once and then every interval until ctx ends;
// failures are logged and retried at the next run.
func (j *Job) Run(ctx context.Context) {
	for {
		if _, err := j.RunOnce(ctx); err != nil && ctx.Err() == nil {
			j.log.Warn("retention run failed; next run in an interval", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(j.interval):
		}
	}
}
