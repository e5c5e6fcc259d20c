package lease_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tallyhq/tally/internal/testenv"
	"github.com/tallyhq/tally/schema"
	"github.com/tallyhq/tally/support/lease"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// clock is a test clock that the test steps.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Set(t time.Time) { c.mu.Lock(); c.now = t; c.mu.Unlock() }

func openStore(t *testing.T) *schema.Store {
	t.Helper()
	s := testenv.OpenStore(t)
	return s
}

func newLease(t *testing.T, s *schema.Store, holder string, c *clock) *lease.Lease {
	t.Helper()
	l, err := lease.New(s, lease.Config{Name: "alerts-evaluator", Holder: holder, TTL: 30 * time.Second,
		Renew: 10 * time.Second, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestLeaseHandsOver(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	clockA, clockB := &clock{now: t0}, &clock{now: t0}
	a, b := newLease(t, s, "a", clockA), newLease(t, s, "b", clockB)

	step := func(name string, l *lease.Lease, want bool) {
		t.Helper()
		got, err := l.TryAcquire(ctx)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got != want {
			t.Fatalf("%s: held = %v, want %v", name, got, want)
		}
	}
	step("a takes the free lease at t0", a, true)
	step("b at t0: a's claim runs to t0+30s", b, false)
	clockA.Set(t0.Add(10 * time.Second))
	step("a renews at t0+10s (now until t0+40s)", a, true)
	clockB.Set(t0.Add(39 * time.Second))
	step("b at t0+39s: still a's", b, false)
	// a stops renewing (crashed): its claim expires at t0+40s.
	clockB.Set(t0.Add(40 * time.Second))
	step("b at t0+40s: a's claim expired", b, true)
	clockA.Set(t0.Add(41 * time.Second))
	step("a at t0+41s: b's claim runs to t0+70s", a, false)
	if a.Held() {
		t.Errorf("a.Held() after losing the lease")
	}
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	step("a after b released", a, true)
	st, err := a.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// a took it at t0+41s with a 30 s TTL.
	if st.Holder != "a" || !st.ExpiresAt.Equal(t0.Add(71*time.Second)) {
		t.Errorf("state = %+v, want holder a until %s", st, t0.Add(71*time.Second))
	}
}

func TestRunWorksOnlyWhileHeldAndReleasesOnStop(t *testing.T) {
	s := openStore(t)
	now := &clock{now: time.Now()}
	a, b := newLease(t, s, "a", now), newLease(t, s, "b", now)

	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		a.Run(ctx, func(workCtx context.Context) {
			close(started)
			<-workCtx.Done()
		})
	}()
	<-started
	if held, err := b.TryAcquire(context.Background()); err != nil || held {
		t.Fatalf("b.TryAcquire while a runs = %v, %v; want false", held, err)
	}
	cancel()
	<-stopped
	// Run released the lease: b takes it at once, without waiting the TTL.
	if held, err := b.TryAcquire(context.Background()); err != nil || !held {
		t.Fatalf("b.TryAcquire after a stopped = %v, %v; want true", held, err)
	}
}
