// Package schedule runs the refresh loop of the jobs that keep data
// derived from the spans by hour (the cost rollup, the search keys index):
// the recent hours often, every hour kept now and then.
package schedule

import (
	"context"
	"log/slog"
	"time"
)

// Periods say which hours a job checks and when. Zero fields take the
// defaults.
type Periods struct {
	Lookback     time.Duration // hours checked by a refresh; default 48h
	FullLookback time.Duration // hours checked by the periodic full check; default 35 days
	Interval     time.Duration // Run: time between refreshes; default 1 min
	FullEvery    time.Duration // Run: time between full checks; default 1 h
}

// WithDefaults fills the zero fields with the defaults.
func (p Periods) WithDefaults() Periods {
	if p.Lookback <= 0 {
		p.Lookback = 48 * time.Hour
	}
	if p.FullLookback <= 0 {
		p.FullLookback = 35 * 24 * time.Hour
	}
	if p.Interval <= 0 {
		p.Interval = time.Minute
	}
	if p.FullEvery <= 0 {
		p.FullEvery = time.Hour
	}
	return p
}

// Run calls refresh over the last Lookback every Interval, and over the
// last FullLookback every FullEvery (first at start), until ctx ends. A
// failed refresh is logged, naming what, and tried again at the next
// tick (a failed full check at the next tick too).
func (p Periods) Run(ctx context.Context, log *slog.Logger, what string, refresh func(ctx context.Context, since, until time.Time) error) {
	p = p.WithDefaults()
	tick := time.NewTicker(p.Interval)
	defer tick.Stop()
	var lastFull time.Time
	for {
		now := time.Now()
		var err error
		if now.Sub(lastFull) >= p.FullEvery {
			if err = refresh(ctx, now.Add(-p.FullLookback), now); err == nil {
				lastFull = now
			}
		} else {
			err = refresh(ctx, now.Add(-p.Lookback), now)
		}
		if err != nil && ctx.Err() == nil {
			log.Warn(what+" refresh failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
