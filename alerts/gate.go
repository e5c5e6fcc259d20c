package alerts

import "context"

// Gate gives a background read that loads runs' spans into memory (the
// review of the runs still in flight, which the signal figures and rules
// read) its turn among tally's background jobs (*loadgate.Gate), so that
// it does not hold its load while the settler and the rollup hold theirs.
type Gate interface {
	Enter(ctx context.Context, job string) (release func(), err error)
}

// enter waits for g's turn for job; a nil g admits at once.
func enter(ctx context.Context, g Gate, job string) (func(), error) {
	if g == nil {
		return func() {}, nil
	}
	return g.Enter(ctx, job)
}
