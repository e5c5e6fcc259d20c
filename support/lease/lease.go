// Package lease elects one holder of a role among tally processes that share
// a ClickHouse database, such as the alert evaluator among the replicas of a
// tally deployment, so that alerts are evaluated once per cluster rather than
// once per replica.
//
// A lease is a row in schema.TableLeases (ReplacingMergeTree keyed by name):
// holder and expiry, the row with the highest version winning. A process
// takes the lease when it is free (no row, released, or expired), renews it
// while it holds it, and releases it when it stops. Taking is
// write-then-confirm: write a claim, read the lease back, hold it only if the
// claim read back is ours.
//
// The window: ClickHouse has no compare-and-set, so two processes that find
// the lease free at the same moment both write a claim. The later write
// (higher version) wins; the earlier writer may have read its own claim back
// before the later one landed and then believes it holds the lease until its
// next renewal, when it reads the winner's claim and stops. So two holders
// overlap for at most one renewal interval, and only when a lease changes
// hands. In cluster mode every lease read and write goes to the first live
// replica of the lease's shard (load_balancing=in_order, which cluster mode
// sets, and prefer_localhost_replica=0), so that all contenders see one
// replica's state rather than replicas that lag each other; while that
// replica is down they all move to the next. For
// alerts that means at worst one duplicate evaluation cycle, whose
// notifications Alertmanager deduplicates by their labels. Expiry uses the
// writers' clocks: keep them in sync (NTP) to well under the TTL.
package lease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/tallyhq/tally/schema"
)

// Default timings.
const (
	DefaultTTL   = 30 * time.Second
	DefaultRenew = 10 * time.Second
)

// Config names a lease and its holder.
type Config struct {
	// Name of the lease ("alerts-evaluator").
	Name string
	// Holder identifies this process; unique among the contenders.
	Holder string
	// TTL is how long a claim lasts without renewal (default DefaultTTL):
	// how long a crashed holder keeps the role from the others.
	TTL time.Duration
	// Renew is the time between renewals and attempts to take the lease
	// (default DefaultRenew); below TTL.
	Renew time.Duration
	// Logger reports changes of hands and errors (default slog.Default()).
	Logger *slog.Logger
	// Now is the clock (default time.Now); tests step it.
	Now func() time.Time
}

// Lease is one named lease, contended for by this process.
type Lease struct {
	store *schema.Store
	cfg   Config

	mu          sync.Mutex
	lastVersion uint64
	heldUntil   time.Time // when our last confirmed claim expires; zero when not held
}

// New returns a Lease on the store's leases table.
func New(store *schema.Store, cfg Config) (*Lease, error) {
	if cfg.Name == "" || cfg.Holder == "" {
		return nil, errors.New("lease: name and holder are required")
	}
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.Renew <= 0 {
		cfg.Renew = DefaultRenew
	}
	if cfg.Renew >= cfg.TTL {
		return nil, fmt.Errorf("lease %s: renew interval %s must be below the TTL %s", cfg.Name, cfg.Renew, cfg.TTL)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Lease{store: store, cfg: cfg}, nil
}

// State is a lease's current claim as read from ClickHouse.
type State struct {
	Holder    string    // "" when never claimed or released
	ExpiresAt time.Time // zero when released
	Version   uint64
}

// Free reports whether the lease can be taken at now.
func (s State) Free(now time.Time) bool {
	return s.Holder == "" || !now.Before(s.ExpiresAt)
}

// consistent makes a context's queries use the first live replica of each
// shard in cluster mode (see the package doc).
func (l *Lease) consistent(ctx context.Context) context.Context {
	if l.store.Cluster() == "" {
		return ctx
	}
	// load_balancing=in_order is already in force (schema.ProfileSettings);
	// a node that is itself a replica of the lease's shard must not read
	// its own copy instead.
	return clickhouse.Context(ctx, clickhouse.WithSettings(clickhouse.Settings{"prefer_localhost_replica": 0}))
}

// Read returns the lease's latest claim.
func (l *Lease) Read(ctx context.Context) (State, error) {
	ctx = l.consistent(ctx)
	var (
		holder    string
		expiresNs uint64
		version   uint64
	)
	err := l.store.Conn().QueryRow(ctx, "SELECT argMax(holder, version), argMax(expires_ns, version), max(version) FROM "+
		l.store.Table(schema.TableLeases)+" WHERE name = ?", l.cfg.Name).Scan(&holder, &expiresNs, &version)
	if err != nil {
		return State{}, fmt.Errorf("read lease %s: %w", l.cfg.Name, err)
	}
	st := State{Holder: holder, Version: version}
	if expiresNs == 0 {
		st.Holder = ""
	} else {
		st.ExpiresAt = time.Unix(0, int64(expiresNs)).UTC()
	}
	return st, nil
}

// TryAcquire takes or renews the lease if it is free or ours, and reports
// whether this process holds it afterwards (confirmed by reading it back).
func (l *Lease) TryAcquire(ctx context.Context) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.cfg.Now()
	st, err := l.Read(ctx)
	if err != nil {
		return false, err
	}
	if st.Holder != l.cfg.Holder && !st.Free(now) {
		l.heldUntil = time.Time{}
		return false, nil
	}
	expires := now.Add(l.cfg.TTL)
	if err := l.write(ctx, now, uint64(expires.UnixNano()), st.Version); err != nil {
		return false, err
	}
	st, err = l.Read(ctx)
	if err != nil {
		return false, err
	}
	if st.Holder != l.cfg.Holder {
		l.heldUntil = time.Time{}
		return false, nil
	}
	l.heldUntil = expires
	return true, nil
}

// Held reports whether our last confirmed claim has not expired.
func (l *Lease) Held() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.heldUntil.IsZero() && l.cfg.Now().Before(l.heldUntil)
}

// Release gives the lease up if this process holds it, so that another takes
// it at its next attempt instead of waiting for the TTL.
func (l *Lease) Release(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	st, err := l.Read(ctx)
	if err != nil {
		return err
	}
	l.heldUntil = time.Time{}
	if st.Holder != l.cfg.Holder {
		return nil
	}
	return l.write(ctx, l.cfg.Now(), 0, st.Version)
}

// write records a claim (expiresNs > 0) or a release (0), with a version
// above both the clock and every version seen, so it supersedes them.
func (l *Lease) write(ctx context.Context, now time.Time, expiresNs, seen uint64) error {
	v := max(uint64(now.UnixNano()), seen+1, l.lastVersion+1)
	l.lastVersion = v
	if err := l.store.InsertLease(l.consistent(ctx), schema.LeaseRow{Name: l.cfg.Name, Holder: l.cfg.Holder, ExpiresNs: expiresNs, Version: v}); err != nil {
		return fmt.Errorf("write lease %s: %w", l.cfg.Name, err)
	}
	return nil
}

// Run contends for the lease until ctx ends, running work while it holds the
// lease: work's context is cancelled when the lease is lost (a renewal found
// another holder, or renewals failed until the claim expired), and work is
// started again when the lease is taken again. On return the lease is
// released, so another process takes over at once.
func (l *Lease) Run(ctx context.Context, work func(ctx context.Context)) {
	var running *worker
	stop := func() {
		if running != nil {
			running.stop()
			running = nil
		}
	}
	tick := time.NewTicker(l.cfg.Renew)
	defer tick.Stop()
	for {
		held, err := l.TryAcquire(ctx)
		if err != nil && ctx.Err() == nil {
			l.cfg.Logger.Warn("lease renewal failed", "lease", l.cfg.Name, "err", err)
			held = l.Held() // keep the role until our last claim expires
		}
		switch {
		case held && running == nil:
			l.cfg.Logger.Info("lease taken", "lease", l.cfg.Name, "holder", l.cfg.Holder)
			running = startWorker(ctx, work)
		case !held && running != nil:
			l.cfg.Logger.Info("lease lost", "lease", l.cfg.Name, "holder", l.cfg.Holder)
			stop()
		}
		select {
		case <-ctx.Done():
			stop()
			releaseCtx, cancelRelease := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			if err := l.Release(releaseCtx); err != nil {
				l.cfg.Logger.Warn("lease release failed", "lease", l.cfg.Name, "err", err)
			}
			cancelRelease()
			return
		case <-tick.C:
		}
	}
}

// worker is work running while the lease is held.
type worker struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func startWorker(ctx context.Context, work func(context.Context)) *worker {
	workCtx, cancel := context.WithCancel(ctx)
	w := &worker{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		work(workCtx)
	}()
	return w
}

// stop cancels the work and waits for it to return.
func (w *worker) stop() {
	w.cancel()
	<-w.done
}
