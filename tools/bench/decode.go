package bench

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"google.golang.org/protobuf/proto"

	"github.com/tallyhq/tally/ingest"
	"github.com/tallyhq/tally/ingest/wire"
	"github.com/tallyhq/tally/pricing"
	"github.com/tallyhq/tally/tools/demo"
)

// requestBody is an OTLP protobuf request of exactly n spans made of whole
// demo runs (natural sizes, the last one sized to fill), like loadgen's.
func requestBody(seed int64, n int) ([]byte, error) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	natural := demo.Generate(demo.Config{Runs: n/10 + 4, Seed: seed, Start: start})
	var runs []demo.Run
	left := n
	for _, r := range natural {
		c := r.SpanCount()
		if c > left || left-c < 10 {
			break
		}
		runs = append(runs, r)
		left -= c
	}
	if left > 0 {
		runs = append(runs, demo.Generate(demo.Config{Runs: 1, Seed: seed + 1, Start: start, Spans: left})...)
	}
	body, err := proto.Marshal(demo.ExportRequest(runs))
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	return body, nil
}

// cpuTime is the process's user plus system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loopRate runs fn repeatedly on one goroutine for about d and returns the
// calls per CPU-second of the process (GC included) and per wall second.
func loopRate(ctx context.Context, d time.Duration, fn func() error) (perCPU, perWall float64, calls int, err error) {
	// One untimed call warms caches and the heap.
	if err := fn(); err != nil {
		return 0, 0, 0, err
	}
	wall0, cpu0 := time.Now(), cpuTime()
	for time.Since(wall0) < d && ctx.Err() == nil {
		if err := fn(); err != nil {
			return 0, 0, 0, err
		}
		calls++
	}
	wall, cpu := time.Since(wall0), cpuTime()-cpu0
	if cpu <= 0 {
		cpu = wall
	}
	return float64(calls) / cpu.Seconds(), float64(calls) / wall.Seconds(), calls, nil
}

// decodeFigures measures figure 2: decode + Normalize spans per core, as the
// receiver does it for protobuf (ingest/wire's decoder), against the pdata
// unmarshal alone (the floor), for one 512-span request; the wire
// decoder alone and the pdata path (JSON's) are figures beside it.
func decodeFigures(ctx context.Context, cfg Config, res *Results) error {
	spans := cfg.RequestSpans
	body, err := requestBody(cfg.Seed, spans)
	if err != nil {
		return err
	}
	cat, err := pricing.Builtin()
	if err != nil {
		return fmt.Errorf("price catalog: %w", err)
	}
	opts := ingest.Options{Project: "bench", Limits: ingest.DefaultLimits(), Pricer: cat, Usage: ingest.DefaultUsagePolicy()}
	var u ptrace.ProtoUnmarshaler
	unmarshal := func() error {
		_, err := u.UnmarshalTraces(body)
		return err
	}
	var d wire.Decoder
	decodeOnly := func() error {
		_, err := d.Decode(body)
		return err
	}
	kept := func(b ingest.Batch, rej ingest.Rejected) error {
		if len(b.Spans) != spans {
			return fmt.Errorf("normalize kept %d of %d spans (%s)", len(b.Spans), spans, rej.Message)
		}
		return nil
	}
	normalize := func() error {
		tr, err := d.Decode(body)
		if err != nil {
			return err
		}
		return kept(ingest.NormalizeTraces(tr, opts))
	}
	viaPdata := func() error {
		td, err := u.UnmarshalTraces(body)
		if err != nil {
			return err
		}
		return kept(ingest.Normalize(td, opts))
	}
	uCPU, uWall, uCalls, err := loopRate(ctx, cfg.DecodeDuration, unmarshal)
	if err != nil {
		return fmt.Errorf("unmarshal: %w", err)
	}
	nCPU, nWall, nCalls, err := loopRate(ctx, cfg.DecodeDuration, normalize)
	if err != nil {
		return fmt.Errorf("normalize: %w", err)
	}
	dCPU, _, dCalls, err := loopRate(ctx, cfg.DecodeDuration, decodeOnly)
	if err != nil {
		return fmt.Errorf("wire decode: %w", err)
	}
	pCPU, _, pCalls, err := loopRate(ctx, cfg.DecodeDuration, viaPdata)
	if err != nil {
		return fmt.Errorf("pdata normalize: %w", err)
	}
	inputs := map[string]any{"request_spans": spans, "request_bytes": len(body), "goroutines": 1,
		"duration_s": cfg.DecodeDuration.Seconds(), "pricer": "built-in catalog"}
	res.add(Figure{ID: "decode.normalize_spans_per_core", Name: "decode + normalize, spans/s per core",
		Value: nCPU * float64(spans), Unit: "spans/s", Available: true, Inputs: inputs,
		Detail: map[string]any{"requests": nCalls, "wall_spans_per_s": nWall * float64(spans),
			"cost_vs_unmarshal": uCPU / nCPU, "us_per_request": 1e6 / nCPU}})
	res.add(Figure{ID: "decode.wire_spans_per_core", Name: "wire decode alone, spans/s per core",
		Value: dCPU * float64(spans), Unit: "spans/s", Available: true, Inputs: inputs,
		Detail: map[string]any{"requests": dCalls, "us_per_request": 1e6 / dCPU}})
	res.add(Figure{ID: "decode.pdata_normalize_spans_per_core", Name: "pdata decode + normalize (the JSON path), spans/s per core",
		Value: pCPU * float64(spans), Unit: "spans/s", Available: true, Inputs: inputs,
		Detail: map[string]any{"requests": pCalls, "us_per_request": 1e6 / pCPU}})
	res.add(Figure{ID: "decode.unmarshal_spans_per_core", Name: "pdata unmarshal alone (floor), spans/s per core",
		Value: uCPU * float64(spans), Unit: "spans/s", Available: true, Inputs: inputs,
		Detail: map[string]any{"requests": uCalls, "wall_spans_per_s": uWall * float64(spans), "us_per_request": 1e6 / uCPU}})
	return nil
}
