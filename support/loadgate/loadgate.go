// Package loadgate lets the background jobs that load spans into memory (the
// settler, the cost rollup, the metrics exporter's review of the runs still
// in flight) take turns, so that their loads add up to one at a time
// instead of all of them at once.
//
// Each of those jobs bounds its own load, but they run on their own
// schedules, and after a restart or an outage every one of them catches up
// at the same moment, under the same ingest that made them late: on the
// embedded store, where the engine shares the process, the loads at once
// were the largest part of tally's heap at twice the sustainable ingest
// rate (docs/benchmarks.md). Requests from users do not pass the gate: a
// page waits for no background job.
package loadgate

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Gate admits at most a fixed number of background loads at a time. The
// zero of *Gate (nil) admits every load at once.
type Gate struct {
	slots chan struct{}
	wait  *prometheus.CounterVec
	held  *prometheus.GaugeVec
}

// New returns a gate for n loads at a time (at least 1).
func New(n int) *Gate {
	return &Gate{
		slots: make(chan struct{}, max(n, 1)),
		wait: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tally_background_load_wait_seconds_total",
			Help: "Time background jobs waited for their turn to load spans into memory (the load gate), by job."}, []string{"job"}),
		held: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tally_background_loads",
			Help: "Background loads holding the load gate now, by job (at most the gate's size in all)."}, []string{"job"}),
	}
}

// Register adds the gate's metrics to reg.
func (g *Gate) Register(reg prometheus.Registerer) error {
	if g == nil {
		return nil
	}
	for _, c := range []prometheus.Collector{g.wait, g.held} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("load gate metrics: %w", err)
		}
	}
	return nil
}

// Enter waits for a turn of job (a name for the metrics) and returns the
// function that ends it, which must be called once the load is out of
// memory. It fails only when ctx ends first.
func (g *Gate) Enter(ctx context.Context, job string) (release func(), err error) {
	if g == nil {
		return func() {}, nil
	}
	began := time.Now()
	select {
	case g.slots <- struct{}{}:
	case <-ctx.Done():
		g.wait.WithLabelValues(job).Add(time.Since(began).Seconds())
		return nil, fmt.Errorf("wait for a turn to load (%s): %w", job, ctx.Err())
	}
	g.wait.WithLabelValues(job).Add(time.Since(began).Seconds())
	held := g.held.WithLabelValues(job)
	held.Inc()
	done := false
	return func() {
		if done {
			return
		}
		done = true
		held.Dec()
		<-g.slots
	}, nil
}
