// Package bench is tally's benchmark suite: the figures of `make bench`,
// each measured in one run against a baseline on the same machine.
//
//  1. ingest efficiency: acknowledged-and-queryable spans/s through
//     /v1/traces of a `tally serve` subprocess ÷ the direct bulk-insert rate
//     (schema.Store.InsertSpans) of the same rows; absolute spans/s and the
//     acknowledgement latency per request;
//  2. decode + normalize spans/s per core, against pdata unmarshal alone;
//  3. run tree p50/p99 through GET /api/v1/runs/{id} with Spans stored;
//  4. cost by agent and by model over 30 days, tool p95 over an hour;
//  5. peak RSS of tally serve at maximum sustained ingest and under 2×
//     overload;
//  6. bytes per span on disk after OPTIMIZE … FINAL;
//  7. peak RSS of tally serve ingesting spans with 1 MiB tool results.
//
// Run takes a ClickHouse address and a tally binary; cmd/tallybench starts
// a private ClickHouse and builds the binary.
package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/tallyhq/tally/ingest/durable"
	"github.com/tallyhq/tally/schema"
)

// Config says what to measure and at what scale.
type Config struct {
	CHAddr string `json:"-"`
	// CHPID is the ClickHouse server's process id, for its CPU time in
	// the ingest figures; 0 leaves that out.
	CHPID    int    `json:"-"`
	TallyBin string `json:"-"`
	// WorkDir holds tally's data directories and logs.
	WorkDir string `json:"-"`
	// DBPrefix starts the names of the databases the suite creates.
	DBPrefix string `json:"db_prefix"`
	// Spans is the number of spans loaded for the read benchmarks.
	Spans int `json:"spans"`
	// Days is how many days before now the loaded runs start in (default
	// 30): fewer days give each hour as many spans as a larger store's,
	// without its load time (the reads' windows stay as they are).
	Days int `json:"days"`
	// LargeRuns are the run sizes the tree benchmark loads.
	LargeRuns []int `json:"large_runs"`
	// LoadContent also loads content rows for the read benchmarks.
	LoadContent bool `json:"load_content"`
	// RequestSpans and Concurrency shape the ingest load.
	RequestSpans int `json:"request_spans"`
	Concurrency  int `json:"concurrency"`
	// IngestDuration is the sustained load; OverloadDuration the 2× load.
	IngestDuration   time.Duration `json:"ingest_duration"`
	OverloadDuration time.Duration `json:"overload_duration"`
	// BaselineRows and BaselineBatch shape the direct bulk insert, whose
	// rate is the efficiency's denominator. BaselineStreamBatch is the
	// batch of a second direct insert reported beside it, at the size of
	// tally's streams (durable.DefaultCommitSpans), so that a ratio won by
	// larger parts than the baseline's shows as such; zero skips it.
	BaselineRows        int `json:"baseline_rows"`
	BaselineBatch       int `json:"baseline_batch"`
	BaselineStreamBatch int `json:"baseline_stream_batch"`
	// LargeContentRequests is how many requests of 8 spans with 1 MiB tool
	// results the large-content figure sends.
	LargeContentRequests int `json:"large_content_requests"`
	// DecodeDuration is how long each decode loop runs.
	DecodeDuration time.Duration `json:"decode_duration"`
	// TreeSamples (per run size; half for 5000+) and RollupSamples are the
	// timed requests per figure.
	TreeSamples int `json:"tree_samples"`
	// PaintSamples is how many times the run page of each big run is
	// opened in Chromium for its first-render figure.
	PaintSamples  int   `json:"paint_samples"`
	RollupSamples int   `json:"rollup_samples"`
	Seed          int64 `json:"seed"`
	// InFlightWarmup is how long agents send before the pages are read
	// with runs in flight (inFlightFigures).
	InFlightWarmup time.Duration `json:"in_flight_warmup"`
	// TallyEnv is added to tally serve's environment (e.g. GOMEMLIMIT=200MiB).
	TallyEnv []string `json:"tally_env,omitempty"`
	// IngestOnly measures figures 1, 2, 5 and the ingested storage only
	// (no load, no reads): for comparing builds of the ingest path.
	IngestOnly bool `json:"ingest_only"`
	// ReadsOnly skips the ingest, large-content and ingested-storage
	// figures: load, settle and reads (and the loaded set's storage).
	ReadsOnly bool `json:"reads_only,omitempty"`
	// Embedded also measures the store-dependent figures on the embedded
	// store (chDB in tally's process), beside the server's.
	Embedded bool `json:"embedded"`
	// SkipServer leaves out the server store's store-dependent figures:
	// for quick rounds on the embedded store alone.
	SkipServer bool `json:"skip_server,omitempty"`
	// ProfileDir, when set, receives cpu.pprof and heap.pprof of tally
	// serve under the sustained ingest load, and heap-overload.pprof at the
	// end of the overload.
	ProfileDir string    `json:"-"`
	Log        io.Writer `json:"-"`
}

// DefaultConfig is the suite as `make bench` runs it: 30 s of ingest and
// the 10M spans for the read benchmarks, which takes about 10
// minutes on the 2-core machine (BENCH_SPANS=1000000 for a quicker look).
func DefaultConfig() Config {
	return Config{
		DBPrefix:             "bench_",
		Spans:                10_000_000,
		LargeRuns:            []int{500, 500, 500, 500, 5000, 5000, 50000},
		RequestSpans:         512,
		Concurrency:          8,
		IngestDuration:       30 * time.Second,
		OverloadDuration:     15 * time.Second,
		BaselineRows:         200_000,
		BaselineBatch:        20_000,
		BaselineStreamBatch:  durable.DefaultCommitSpans,
		LargeContentRequests: 48,
		DecodeDuration:       3 * time.Second,
		TreeSamples:          40,
		PaintSamples:         3,
		RollupSamples:        20,
		InFlightWarmup:       15 * time.Second,
		Seed:                 1,
		Embedded:             true,
		LoadContent:          true, // search's full-text figures read it
	}
}

func (c Config) logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, format+"\n", args...)
	}
}

// startTally starts tally serve over database db on tg, named for its logs.
func (c Config) startTally(ctx context.Context, tg *target, db, name string, debug bool) (*Tally, error) {
	if err := tg.release(); err != nil {
		return nil, err
	}
	if tg.kind == storeEmbedded {
		// Every tally of the embedded pass has the one data directory (the
		// store is in it): a durable log left by one run must not be
		// replayed into the next run's database.
		if err := os.RemoveAll(filepath.Join(tg.dataDir, "wal")); err != nil {
			return nil, fmt.Errorf("clear the durable log: %w", err)
		}
	}
	return StartTally(ctx, TallyOptions{
		Bin: c.TallyBin, Store: tg.tallyArgs(db), Debug: debug, Env: c.TallyEnv,
		DataDir: tg.tallyDataDir(c.WorkDir, name),
		LogPath: filepath.Join(c.WorkDir, "tally-"+tg.prefix+name+".log"),
	})
}

// storeFigures measures the figures that depend on the store, on tg: ingest,
// storage, load, rollup and reads (large content on the server only).
func storeFigures(ctx context.Context, cfg Config, tg *target, res *Results) error {
	cfg.logf("— %s store —", tg.kind)
	if !cfg.ReadsOnly {
		if err := ingestStoreFigures(ctx, cfg, tg, res); err != nil {
			return err
		}
	}
	if cfg.IngestOnly {
		return nil
	}
	st, err := loadFigures(ctx, cfg, tg, res)
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	if err := storageFigures(ctx, cfg, tg, res, cfg.DBPrefix+"load", "storage.bytes_per_span_loaded",
		"storage per span on disk, loaded data set"); err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	if err := readFigures(ctx, cfg, tg, res, st); err != nil {
		return fmt.Errorf("reads: %w", err)
	}
	return nil
}

// ingestStoreFigures measures ingest, large content (server only) and the
// ingested data's storage on tg.
func ingestStoreFigures(ctx context.Context, cfg Config, tg *target, res *Results) error {
	if err := ingestFigures(ctx, cfg, tg, res); err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	if tg.kind == storeServer {
		if err := largeContentFigures(ctx, cfg, tg, res); err != nil {
			return fmt.Errorf("large content: %w", err)
		}
	}
	cfg.logf("storage: OPTIMIZE … FINAL")
	if err := storageFigures(ctx, cfg, tg, res, cfg.DBPrefix+"ingest", "storage.bytes_per_span",
		"storage per span on disk, ingested through /v1/traces (spans + content + span_facts)"); err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	return nil
}

// Run measures every figure and returns them. A figure that this build
// cannot measure is recorded as not available; any other failure ends the
// run with an error (and the figures so far).
func Run(ctx context.Context, cfg Config) (*Results, error) {
	began := time.Now()
	res := &Results{Started: began.UTC(), Config: cfg}
	probe, err := schema.Open(ctx, schema.Config{Addr: cfg.CHAddr, Database: "default"})
	if err != nil {
		return res, err
	}
	res.Machine = DescribeMachine(ctx, probe)
	probe.Close()
	finish := func(err error) (*Results, error) {
		res.Duration = time.Since(began).Round(time.Second).String()
		return res, err
	}

	cfg.logf("decode + normalize (%s per loop)", cfg.DecodeDuration)
	if err := decodeFigures(ctx, cfg, res); err != nil {
		return finish(fmt.Errorf("decode: %w", err))
	}
	var targets []*target
	if !cfg.SkipServer {
		targets = append(targets, serverTarget(cfg.CHAddr))
	}
	if cfg.Embedded {
		tg, err := embeddedTarget(filepath.Join(cfg.WorkDir, "embedded"))
		if err != nil {
			return finish(fmt.Errorf("embedded store: %w", err))
		}
		targets = append(targets, tg)
		probe, err := tg.open(ctx, "default")
		if err != nil {
			return finish(fmt.Errorf("embedded store: %w", err))
		}
		res.Machine.EmbeddedVersion = probe.Capabilities().Version + " (" + tg.lib + ")"
		probe.Close()
	}
	for _, tg := range targets {
		err := storeFigures(ctx, cfg, tg, res)
		if rerr := tg.release(); err == nil {
			err = rerr
		}
		if err != nil {
			return finish(fmt.Errorf("%s store: %w", tg.kind, err))
		}
	}
	res.Notes = append(res.Notes,
		"Ingest: tally serve runs as a subprocess (built from ./cmd/tally) on the same 2 cores as ClickHouse and the load generator; "+
			"end-to-end spans/s = acknowledged spans ÷ (load time + wait until the stored count, checked with FINAL, matches).",
		"Direct baseline: the same rows read back from the ingest database, inserted with schema.Store.InsertSpans/InsertContents "+
			"(one stream, content first like the writer) into another database; median of 3 passes.",
		"Reads run after OPTIMIZE … FINAL (the merged state of data older than a few minutes); one client, sequential requests, full answer read.",
	)
	if cfg.Embedded {
		res.Notes = append(res.Notes,
			"Embedded store: the same figures with tally serve --store embedded (chDB in tally's process, so its peak RSS includes the engine's). "+
				"The suite cannot read the store while tally has it open, so there queryable means inserted (tally_writer_written_spans_total reaches "+
				"the acknowledged count and the durable log is empty) and the deduplicated count (FINAL) is checked once tally has stopped; the direct "+
				"baseline inserts through the same engine in the suite's process.")
	}
	return finish(nil)
}
