package loadgate

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// held is the gauge of job's loads holding g.
func held(t *testing.T, g *Gate, job string) float64 {
	t.Helper()
	var m dto.Metric
	if err := g.held.WithLabelValues(job).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}

// TestGateAdmitsAtMostItsSize: a gate of n gives n turns at once and not
// one more (an Enter whose context has ended finds no turn free: the gate
// is full), and a released turn is taken again.
func TestGateAdmitsAtMostItsSize(t *testing.T) {
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for _, n := range []int{1, 2, 3} {
		g := New(n)
		var releases []func()
		for i := range n {
			release, err := g.Enter(context.Background(), "test")
			if err != nil {
				t.Fatalf("gate of %d: turn %d: %v", n, i+1, err)
			}
			releases = append(releases, release)
		}
		if _, err := g.Enter(ended, "test"); !errors.Is(err, context.Canceled) {
			t.Fatalf("gate of %d with %d turns held: Enter gave %v, want no turn (context.Canceled)", n, n, err)
		}
		if got := held(t, g, "test"); got != float64(n) {
			t.Errorf("gate of %d: %v loads held, want %d", n, got, n)
		}
		releases[0]()
		releases[0]() // a second call frees nothing more
		ctx, stop := context.WithTimeout(context.Background(), time.Minute)
		again, err := g.Enter(ctx, "test")
		stop()
		if err != nil {
			t.Fatalf("gate of %d after a release: %v", n, err)
		}
		if _, err := g.Enter(ended, "test"); !errors.Is(err, context.Canceled) {
			t.Fatalf("gate of %d full again (a double release freed a turn): Enter gave %v", n, err)
		}
		again()
		for _, r := range releases[1:] {
			r()
		}
		if got := held(t, g, "test"); got != 0 {
			t.Errorf("gate of %d: %v loads held after all released, want 0", n, got)
		}
	}
}

// TestGateWaitsForItsTurn: with the one turn taken, an Enter whose context
// ends first fails without taking a turn, and one that waits (it can only
// return once the turn is given back: the gate is full, which the ended
// Enter shows) gets it after the release; each job has its wait counter.
func TestGateWaitsForItsTurn(t *testing.T) {
	g := New(1)
	reg := prometheus.NewRegistry()
	if err := g.Register(reg); err != nil {
		t.Fatal(err)
	}
	release, err := g.Enter(context.Background(), "settle")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := g.Enter(ctx, "rollup"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Enter with the turn taken and its context ended: %v, want context.Canceled", err)
	}
	entered := make(chan func())
	go func() {
		r, err := g.Enter(context.Background(), "rollup")
		if err != nil {
			t.Error(err)
		}
		entered <- r
	}()
	if got := held(t, g, "settle"); got != 1 {
		t.Errorf("settle loads held: %v, want 1", got)
	}
	release()
	r := <-entered // waits for the release: no timing assumed
	if got := held(t, g, "rollup"); got != 1 {
		t.Errorf("rollup loads held after the settler's release: %v, want 1", got)
	}
	r()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := 0
	for _, f := range families {
		if f.GetName() == "tally_background_load_wait_seconds_total" {
			series = len(f.GetMetric())
		}
	}
	if series != 2 {
		t.Errorf("wait counters: %d series, want one for each job (settle, rollup)", series)
	}
}

// TestNilGateAdmitsAll: a nil gate (tests, tools) admits every load.
func TestNilGateAdmitsAll(t *testing.T) {
	var g *Gate
	for range 3 {
		release, err := g.Enter(context.Background(), "x")
		if err != nil {
			t.Fatal(err)
		}
		defer release()
	}
	if err := g.Register(prometheus.NewRegistry()); err != nil {
		t.Fatal(err)
	}
}
