package retention

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tallyhq/tally/schema"
)

// PartLister lists the parts the store set aside as damaged;
// *schema.Store implements it.
type PartLister interface {
	DetachedParts(ctx context.Context) ([]schema.DetachedPart, error)
}

// PartWatch reports the parts of tally's tables that the store set aside
// for a reason of its own — above all a part it found damaged at start and
// moved to detached/ ("broken-on-start"), whose rows every read then
// silently lacks. It checks at start and every interval, and says so in
// the log, in /readyz (degraded, not failing: the rest of the data is
// served), in tally_store_detached_parts and in the storage report.
type PartWatch struct {
	store PartLister
	every time.Duration
	log   *slog.Logger

	mu    sync.Mutex
	parts []schema.DetachedPart
	known map[string]bool // parts already logged
}

// DefaultPartCheckInterval is how often PartWatch looks unless told.
const DefaultPartCheckInterval = 5 * time.Minute

// NewPartWatch makes a watch over store, checking every interval (0:
// DefaultPartCheckInterval).
func NewPartWatch(store PartLister, every time.Duration, log *slog.Logger) *PartWatch {
	if every <= 0 {
		every = DefaultPartCheckInterval
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &PartWatch{store: store, every: every, log: log, known: map[string]bool{}}
}

// Run checks now and every interval until ctx ends.
func (w *PartWatch) Run(ctx context.Context) {
	t := time.NewTicker(w.every)
	defer t.Stop()
	for {
		w.Check(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Check looks once, logging each part it has not logged before.
func (w *PartWatch) Check(ctx context.Context) {
	parts, err := w.store.DetachedParts(ctx)
	if err != nil {
		return // keep the last list: the store may be down for a while
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.parts = parts
	for _, p := range parts {
		key := p.Table + "/" + p.Name
		if w.known[key] {
			continue
		}
		w.known[key] = true
		w.log.Error("store: a part was set aside by the engine and its rows are not read; see docs/operations.md (a damaged part) to recover it",
			"table", p.Table, "part", p.Name, "partition", p.PartitionID, "reason", p.Reason)
	}
}

// Parts are the parts set aside at the last check that succeeded.
func (w *PartWatch) Parts() []schema.DetachedPart {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]schema.DetachedPart(nil), w.parts...)
}

// Degraded is nil while no part is set aside, else what /readyz reports.
func (w *PartWatch) Degraded(context.Context) error {
	parts := w.Parts()
	if len(parts) == 0 {
		return nil
	}
	names := make([]string, 0, min(len(parts), 5))
	for _, p := range parts[:min(len(parts), 5)] {
		names = append(names, p.Table+"/"+p.Name+" ("+p.Reason+")")
	}
	more := ""
	if len(parts) > 5 {
		more = fmt.Sprintf(" and %d more", len(parts)-5)
	}
	noun := "parts"
	if len(parts) == 1 {
		noun = "part"
	}
	return fmt.Errorf("%d %s set aside by the engine, their rows not read: %s%s", len(parts), noun, strings.Join(names, ", "), more)
}

// Collector exports tally_store_detached_parts.
func (w *PartWatch) Collector() prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tally_store_detached_parts",
		Help: "Parts of tally's tables the engine set aside (damaged at start, unexpected…): their rows are not read until recovered."},
		func() float64 { return float64(len(w.Parts())) })
}
