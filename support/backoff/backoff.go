// Package backoff spaces the retries of a failing write: exponential backoff
// with equal jitter. It is the one retry rule of the span writer
// (ingest/writer, retrying an INSERT) and of the durable log's drain
// (ingest/durable, retrying a downstream write or stream), which both wrote
// it out before.
package backoff

import (
	"math/rand/v2"
	"time"
)

// Backoff gives the waits between the attempts of one failing operation.
//
// A ceiling starts at the minimum and doubles after every wait, up to the
// maximum; each wait is drawn uniformly from [ceiling/2, ceiling] ("equal
// jitter"). So the waits lie within [min/2, max], the first within
// [min/2, min]. Half the ceiling is kept so that a retry never follows its
// failure at once, and half is random so that writers failing together
// (every replica when ClickHouse restarts) do not retry in lockstep. Full
// jitter ([0, ceiling]) was not chosen: it may retry at once, and the
// callers had both settled on equal jitter before this package held it.
//
// A Backoff is not safe for concurrent use: one belongs to one retry loop.
type Backoff struct {
	min, max time.Duration
	ceiling  time.Duration
	// jitter draws from [0, n); nil is rand.N. Tests fix it to draw the
	// bounds.
	jitter func(n time.Duration) time.Duration
}

// New returns a Backoff whose ceiling starts at min and grows to max. A
// negative bound counts as zero (a zero minimum retries at once, forever);
// a minimum above the maximum gives one wait of at most min, then waits of
// at most max.
func New(min, max time.Duration) *Backoff {
	min, max = clampZero(min), clampZero(max)
	return &Backoff{min: min, max: max, ceiling: min}
}

// Next returns the wait before the next attempt, drawn from
// [ceiling/2, ceiling], and doubles the ceiling, up to the maximum.
func (b *Backoff) Next() time.Duration {
	half := b.ceiling / 2
	draw := rand.N[time.Duration]
	if b.jitter != nil {
		draw = b.jitter
	}
	wait := half + draw(half+1)
	// Doubling past half the maximum is the maximum: min(2c, max) without
	// overflowing when the maximum is near the largest Duration.
	if b.ceiling > b.max/2 {
		b.ceiling = b.max
	} else {
		b.ceiling *= 2
	}
	return wait
}

// Reset starts the waits over from the minimum: after an attempt succeeded,
// the next failure is a new one.
func (b *Backoff) Reset() { b.ceiling = b.min }

// clampZero is d, or zero when d is negative.
func clampZero(d time.Duration) time.Duration { return max(d, 0) }
