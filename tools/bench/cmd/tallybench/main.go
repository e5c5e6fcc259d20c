// Command tallybench runs tally's benchmark suite (package bench): it starts
// a private ClickHouse in a temporary directory on free ports (with
// deploy/clickhouse/start.sh), builds ./cmd/tally, measures every figure,
// prints the table and writes bench/results.json and bench/results.md.
//
//	go run ./bench/cmd/tallybench [--spans 10000000] [--out bench] [--profile-dir DIR]
//
// BENCH_SPANS sets the default of --spans (10M; make bench BENCH_SPANS=1000000).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/tallyhq/tally/tools/bench"
	"github.com/tallyhq/tally/tools/bench/loader"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "tallybench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	cfg := bench.DefaultConfig()
	if v := os.Getenv("BENCH_SPANS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return fmt.Errorf("BENCH_SPANS=%q: want a positive integer", v)
		}
		cfg.Spans = n
	}
	out := flag.String("out", "tools/bench", "directory for results.json and results.md")
	keep := flag.Bool("keep", false, "keep the ClickHouse data and tally logs (printed at the end)")
	tallyBin := flag.String("tally", "", "tally binary to benchmark (default: build ./cmd/tally)")
	flag.IntVar(&cfg.Spans, "spans", cfg.Spans, "spans loaded for the read benchmarks (env BENCH_SPANS)")
	flag.IntVar(&cfg.Days, "days", loader.DefaultDays, "days the loaded runs start in: fewer give each hour the spans of a larger store (the reads' windows stay as they are)")
	flag.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "ingest requests in flight")
	flag.IntVar(&cfg.RequestSpans, "request-spans", cfg.RequestSpans, "spans per ingest request")
	flag.DurationVar(&cfg.IngestDuration, "ingest-duration", cfg.IngestDuration, "sustained ingest load")
	flag.DurationVar(&cfg.OverloadDuration, "overload-duration", cfg.OverloadDuration, "2× overload")
	flag.Func("tally-env", "KEY=VALUE added to tally serve's environment (repeatable), e.g. GOMEMLIMIT=200MiB", func(v string) error {
		if !strings.Contains(v, "=") {
			return fmt.Errorf("want KEY=VALUE")
		}
		cfg.TallyEnv = append(cfg.TallyEnv, v)
		return nil
	})
	flag.BoolVar(&cfg.Embedded, "embedded", true, "also measure the store-dependent figures on the embedded store (needs libchdb.so: make deps)")
	server := flag.Bool("server", true, "measure the store-dependent figures on the ClickHouse server store (false: the embedded store's only)")
	flag.BoolVar(&cfg.IngestOnly, "ingest-only", false, "measure the ingest figures only (compare builds with --tally)")
	flag.BoolVar(&cfg.ReadsOnly, "reads-only", false, "measure the load, settle and read figures only")
	flag.StringVar(&cfg.ProfileDir, "profile-dir", "", "write CPU and heap profiles of tally serve under ingest load here")
	repeat := flag.Int("repeat", 1, "run the selected figures this many times on the same build (each run's results in OUT/run-K, fresh databases and data dirs), and write in OUT each figure's median with its spread")
	flag.Parse()
	if *repeat < 1 {
		return fmt.Errorf("--repeat %d: want at least 1", *repeat)
	}
	cfg.SkipServer = !*server
	if cfg.SkipServer && !cfg.Embedded {
		return fmt.Errorf("--server=false --embedded=false measures no store")
	}
	cfg.Log = os.Stdout

	root, err := bench.ModuleRoot()
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "tallybench-")
	if err != nil {
		return fmt.Errorf("work dir: %w", err)
	}
	cfg.WorkDir = work
	if cfg.ProfileDir != "" {
		if err := os.MkdirAll(cfg.ProfileDir, 0o755); err != nil {
			return fmt.Errorf("profile dir: %w", err)
		}
	}
	cfg.TallyBin = *tallyBin
	if cfg.TallyBin == "" {
		fmt.Println("building ./cmd/tally")
		if cfg.TallyBin, err = bench.BuildTally(ctx, root, work); err != nil {
			return err
		}
	}
	fmt.Println("starting ClickHouse in", filepath.Join(work, "clickhouse"))
	ch, err := bench.StartClickHouse(ctx, root, filepath.Join(work, "clickhouse"))
	if err != nil {
		return err
	}
	cfg.CHAddr = ch.Addr
	cfg.CHPID = ch.PID()
	var runs []*bench.Results
	var runErr error
	for k := 1; k <= *repeat && runErr == nil; k++ {
		rc := cfg
		if *repeat > 1 {
			fmt.Printf("— run %d of %d —\n", k, *repeat)
			rc.WorkDir, rc.DBPrefix = filepath.Join(work, fmt.Sprintf("run-%d", k)), fmt.Sprintf("%sr%d_", cfg.DBPrefix, k)
			if err := os.MkdirAll(rc.WorkDir, 0o755); err != nil {
				runErr = fmt.Errorf("work dir: %w", err)
				break
			}
		}
		var res *bench.Results
		res, runErr = bench.Run(ctx, rc)
		if res == nil || len(res.Figures) == 0 {
			continue
		}
		runs = append(runs, res)
		if *repeat > 1 {
			dir := filepath.Join(*out, fmt.Sprintf("run-%d", k))
			if err := res.Write(dir); err != nil {
				return err
			}
			fmt.Printf("wrote run %d's results in %s\n", k, dir)
		}
	}
	var res *bench.Results
	switch len(runs) {
	case 0:
	case 1:
		res = runs[0]
	default:
		res = bench.Spread(runs)
	}
	if err := ch.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "tallybench:", err)
	}
	if *keep {
		fmt.Println("kept", work)
	} else if err := os.RemoveAll(work); err != nil {
		fmt.Fprintln(os.Stderr, "tallybench: remove work dir:", err)
	}
	if len(runs) > 0 {
		fmt.Print("\n", res.Markdown())
		if err := res.Write(*out); err != nil {
			return err
		}
		fmt.Printf("\nwrote %s and %s\n", filepath.Join(*out, "results.json"), filepath.Join(*out, "results.md"))
	}
	return runErr
}
