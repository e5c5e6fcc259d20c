package bench

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/tallyhq/tally/tools/loadgen"
)

// inFlightFigures measures the pages that read runs while agents send: a
// load of inFlightRate requests a second of inFlightSpans spans goes to
// tally (its settler off, as in the read pass), so every run it sends stays
// in flight — read from its spans, not the run table — and after
// cfg.InFlightWarmup the pages are read beside it. It is the case of a busy
// deployment: on 18.16 the runs in flight, aggregated in ClickHouse, cost
// every such page ~1 s before they were summarized in Go.
func inFlightFigures(ctx context.Context, cfg Config, res *Results, tg *target, client *http.Client, url string, spansStored int) error {
	const (
		inFlightRate  = 2.0
		inFlightSpans = 64
	)
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	sent := make(chan error, 1)
	go func() {
		_, err := loadgen.Run(lctx, loadgen.Config{Endpoint: url, RequestSpans: inFlightSpans, Concurrency: 1,
			Rate: inFlightRate, Duration: time.Hour, Seed: cfg.Seed})
		sent <- err
	}()
	select {
	case err := <-sent:
		return fmt.Errorf("runs in flight: the load ended: %v", err)
	case <-time.After(cfg.InFlightWarmup):
	case <-ctx.Done():
		return ctx.Err()
	}
	pages := []struct{ id, name, path, window string }{
		{"inflight.runs.1h.p99", "run list of the last hour, with runs in flight, p99", "/api/v1/runs?since=1h", "1h"},
		{"inflight.runs.cost.7d.p99", "run list by cost over 7 days, with runs in flight, p99", "/api/v1/runs?since=7d&sort=cost", "7d"},
		{"inflight.tasks.7d.p99", "consistency per task over 7 days, with runs in flight, p99", "/api/v1/tasks?since=7d", "7d"},
		{"inflight.signals.24h.p99", "safety review of 24 hours, with runs in flight, p99", "/api/v1/signals?since=24h", "24h"},
		{"inflight.conversations.7d.p99", "conversations over 7 days, with runs in flight, p99", "/api/v1/conversations?since=7d", "7d"},
	}
	for _, p := range pages {
		pageFigure(ctx, cfg, tg, res, client, url, p.id, p.name, p.path, map[string]any{"spans_stored": spansStored, "window": p.window,
			"load_requests_per_s": inFlightRate, "load_request_spans": inFlightSpans, "load_warmup_s": cfg.InFlightWarmup.Seconds()})
	}
	stop()
	<-sent // stopped: what it sent is the load, whatever it says
	return nil
}
