package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/tallyhq/tally/ingest/durable"
	"github.com/tallyhq/tally/ingest/wal"
)

// durableFlags configure the durable log in front of the ClickHouse writer.
type durableFlags struct {
	disabled     bool
	maxBytes     int64
	segmentBytes int64
	noSync       bool
}

func init() {
	var f durableFlags
	serveFlagHooks = append(serveFlagHooks, func(fs *pflag.FlagSet) {
		fs.Int64Var(&f.maxBytes, "wal-max-bytes", 1<<30, "durable log size cap; above it ingest answers 503 with Retry-After and /readyz is not ready")
		fs.Int64Var(&f.segmentBytes, "wal-segment-bytes", 64<<20, "durable log segment size")
		fs.BoolVar(&f.noSync, "wal-no-sync", false, "UNSAFE, benchmarks only: acknowledge before fsync (a machine crash can lose acknowledged spans)")
		fs.BoolVar(&f.disabled, "no-wal", false, "acknowledge only after ClickHouse took the rows, without a local log (a ClickHouse outage then refuses ingest)")
	})
	serveHooks = append(serveHooks, func(env *serveEnv) error { return wireDurable(env, f) })
}

// wireDurable puts the durable log between the receiver and the writer: a 200
// from /v1/traces then means the spans are fsynced in <data-dir>/wal, and
// they reach ClickHouse from there even across crashes and outages.
func wireDurable(env *serveEnv, f durableFlags) error {
	if f.disabled {
		env.log.Warn("durable log disabled (--no-wal): spans are acknowledged only once in ClickHouse, and refused while it is down")
		return nil
	}
	if f.noSync {
		env.log.Warn("durable log without fsync (--wal-no-sync): acknowledged spans can be lost if the machine crashes")
	}
	cfg := durable.DefaultConfig()
	cfg.MaxBatchSpans = env.srv.Writer().MaxBatchSpans() // --batch-spans
	cfg.MaxBatchBytes = env.srv.Writer().MaxBatchBytes() // --batch-bytes
	cfg.WAL = wal.Options{MaxBytes: f.maxBytes, SegmentBytes: f.segmentBytes, NoSync: f.noSync, Logger: env.log}
	sink, err := durable.Open(filepath.Join(env.dataDir, "wal"), env.srv.Writer(), cfg, env.log)
	if err != nil {
		return fmt.Errorf("open durable log: %w", err)
	}
	env.srv.SetSink(sink)
	env.srv.AddJob(func(ctx context.Context) {
		if err := sink.Run(ctx); err != nil {
			env.log.Error("durable log stopped delivering; spans stay in the log until this is fixed", "err", err)
		}
		if err := sink.Close(); err != nil {
			env.log.Error("close durable log", "err", err)
		}
	})
	env.srv.AddIngestCheck("durable_log", func(context.Context) error { return sink.Ready() })
	return registerDurableMetrics(env.srv.Registry(), sink)
}

func registerDurableMetrics(reg prometheus.Registerer, sink *durable.Sink) error {
	gauge := func(name, help string, f func(durable.Stats) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return f(sink.Stats()) })
	}
	counter := func(name, help string, f func(durable.Stats) float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return f(sink.Stats()) })
	}
	for _, c := range []prometheus.Collector{
		gauge("tally_wal_bytes", "Bytes of acknowledged spans in the durable log not yet in ClickHouse.", func(s durable.Stats) float64 { return float64(s.WALBytes) }),
		gauge("tally_wal_max_bytes", "Durable log size cap.", func(s durable.Stats) float64 { return float64(s.WALMaxBytes) }),
		gauge("tally_wal_pending_records", "Durable log records not yet delivered to ClickHouse.", func(s durable.Stats) float64 { return float64(s.PendingRecords) }),
		counter("tally_wal_appended_spans_total", "Spans appended (acknowledged).", func(s durable.Stats) float64 { return float64(s.AppendedSpans) }),
		counter("tally_wal_delivered_spans_total", "Spans delivered from the durable log to ClickHouse.", func(s durable.Stats) float64 { return float64(s.DeliveredSpans) }),
		counter("tally_wal_delivery_retries_total", "Retries delivering to ClickHouse.", func(s durable.Stats) float64 { return float64(s.Retries) }),
		counter("tally_wal_refused_full_total", "Requests refused because the durable log was full.", func(s durable.Stats) float64 { return float64(s.RefusedFull) }),
	} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("register durable log metrics: %w", err)
		}
	}
	return nil
}
