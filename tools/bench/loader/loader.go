// Package loader fills tally's ClickHouse tables with many realistic spans
// quickly, straight through schema.Store (not the OTLP/HTTP path), for
// benchmarks of the read side: run trees, cost rollups, tool statistics.
//
// Rows are the demo's agent runs (package demo) normalized and priced the
// way ingest does it, once, into templates; the load then clones templates
// with fresh trace and span ids and start times spread evenly (oldest first)
// over the last Days days, and writes them in large batches from several
// concurrent INSERT streams. Cloning costs a few allocations per run, so
// ClickHouse, not the generator, sets the pace.
package loader

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tallyhq/tally/ingest"
	"github.com/tallyhq/tally/pricing"
	"github.com/tallyhq/tally/schema"
)

// Defaults for the zero values of Config.
const (
	DefaultDays      = 30
	DefaultRunSize   = 20
	DefaultProject   = "default"
	DefaultBatchRows = 100_000
	DefaultInserters = 2
)

// templateRuns is how many distinct normal-sized runs are cloned.
const templateRuns = 256

// minRunSize is the smallest run a template has.
const minRunSize = 4

// Store is where rows go; *schema.Store implements it.
type Store interface {
	InsertSpans(ctx context.Context, rows []schema.Span) error
	InsertContents(ctx context.Context, rows []schema.Content) error
}

// Config says what to load.
type Config struct {
	// Spans is the number of span rows to write, exactly (large runs included).
	Spans int
	// Days spreads run start times evenly over the Days days before End.
	Days int
	// RunSize is the mean size of a normal run; sizes vary from half to one
	// and a half times it (at least 4 spans).
	RunSize int
	// LargeRuns are extra runs of exactly these sizes (e.g. 500, 5000),
	// spread through the load; their trace ids are in Stats.Large.
	LargeRuns []int
	// Seed selects the run shapes and the ids; the same Config writes the
	// same rows.
	Seed int64
	// Project is stamped on every row.
	Project string
	// End is the latest run start; zero means now.
	End time.Time
	// Content also writes the runs' content rows (tool arguments and
	// results, messages) into the content table.
	Content bool
	// BatchRows is the number of span rows per INSERT.
	BatchRows int
	// Inserters is the number of concurrent INSERT streams.
	Inserters int
	// Pricer prices the template spans; nil uses the built-in catalog.
	Pricer ingest.Pricer
}

// Run identifies one run written by Load.
type Run struct {
	TraceID string
	Spans   int
	Start   time.Time
}

// Needle is a phrase found in the content of one run in NeedleEvery (the
// first content row of runs NeedleEvery/2, NeedleEvery·1.5, …), and in no
// other: what a search for a rare phrase finds (10 runs of the default
// 500k, spread over the window).
const (
	Needle      = "chargeback dispute CB-77310"
	NeedleEvery = 50_000
)

// Stats is what Load wrote and how fast.
type Stats struct {
	Spans    int
	Contents int
	Runs     int
	Batches  int
	Elapsed  time.Duration
	// SpansPerSecond is Spans / Elapsed (content rows not counted).
	SpansPerSecond float64
	// Large are the runs of Config.LargeRuns, in load order.
	Large []Run
	// Needles are the runs whose content holds Needle, in load order.
	Needles []Run
	// Since and Until bound the runs' start times.
	Since, Until time.Time
}

func (c Config) withDefaults() Config {
	if c.Days <= 0 {
		c.Days = DefaultDays
	}
	if c.RunSize <= 0 {
		c.RunSize = DefaultRunSize
	}
	if c.Project == "" {
		c.Project = DefaultProject
	}
	if c.End.IsZero() {
		c.End = time.Now()
	}
	c.End = c.End.UTC()
	if c.BatchRows <= 0 {
		c.BatchRows = DefaultBatchRows
	}
	if c.Inserters <= 0 {
		c.Inserters = DefaultInserters
	}
	return c
}

// batch is one INSERT's rows.
type batch struct {
	spans    []schema.Span
	contents []schema.Content
}

// Load writes cfg.Spans span rows into store and reports the rate. It stops
// at the first failed INSERT (rows already written stay).
func Load(ctx context.Context, store Store, cfg Config) (Stats, error) {
	if cfg.Spans <= 0 {
		return Stats{}, errors.New("loader: Spans must be positive")
	}
	cfg = cfg.withDefaults()
	large := 0
	for _, n := range cfg.LargeRuns {
		if n <= 0 {
			return Stats{}, fmt.Errorf("loader: large run size %d must be positive", n)
		}
		large += n
	}
	if large > cfg.Spans {
		return Stats{}, fmt.Errorf("loader: large runs hold %d spans, more than Spans (%d)", large, cfg.Spans)
	}
	pricer := cfg.Pricer
	if pricer == nil {
		cat, err := pricing.Builtin()
		if err != nil {
			return Stats{}, fmt.Errorf("loader: price catalog: %w", err)
		}
		pricer = cat
	}
	sizes := make([]int, templateRuns)
	lo := max(minRunSize, cfg.RunSize/2)
	hi := max(lo, cfg.RunSize+(cfg.RunSize-lo))
	for i := range sizes {
		sizes[i] = lo + i%(hi-lo+1)
	}
	normal, err := buildTemplates(cfg.Seed, sizes, 0, pricer, cfg.Project)
	if err != nil {
		return Stats{}, fmt.Errorf("loader: %w", err)
	}
	bigs, err := buildTemplates(cfg.Seed^0x5eed, cfg.LargeRuns, 0, pricer, cfg.Project)
	if err != nil {
		return Stats{}, fmt.Errorf("loader: %w", err)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan *batch, cfg.Inserters)
	free := make(chan *batch, cfg.Inserters+2)
	for range cfg.Inserters + 2 {
		free <- &batch{}
	}
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	fail := func(err error) {
		errOnce.Do(func() { firstErr = err; cancel() })
	}
	began := time.Now()
	for range cfg.Inserters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range work {
				if err := insert(ctx, store, b); err != nil {
					fail(err)
				}
				b.spans, b.contents = b.spans[:0], b.contents[:0]
				free <- b
			}
		}()
	}
	st := generate(ctx, cfg, normal, bigs, work, free)
	close(work)
	wg.Wait()
	st.Elapsed = time.Since(began)
	if st.Elapsed > 0 {
		st.SpansPerSecond = float64(st.Spans) / st.Elapsed.Seconds()
	}
	if firstErr != nil {
		return st, fmt.Errorf("loader: %w", firstErr)
	}
	if err := ctx.Err(); err != nil {
		return st, fmt.Errorf("loader: %w", err)
	}
	return st, nil
}

func insert(ctx context.Context, store Store, b *batch) error {
	if err := store.InsertContents(ctx, b.contents); err != nil {
		return err
	}
	return store.InsertSpans(ctx, b.spans)
}

// generate clones runs in start-time order into batches and hands them to
// the inserters until cfg.Spans rows are written or ctx ends. The counts in
// the returned Stats are of rows handed over.
func generate(ctx context.Context, cfg Config, normal, bigs []template, work chan<- *batch, free <-chan *batch) Stats {
	window := time.Duration(cfg.Days) * 24 * time.Hour
	since := cfg.End.Add(-window)
	st := Stats{Since: since, Until: cfg.End}
	version := uint64(time.Now().UnixNano())
	var b *batch
	next := func() bool {
		select {
		case b = <-free:
			return true
		case <-ctx.Done():
			return false
		}
	}
	if !next() {
		return st
	}
	ship := func() bool {
		if len(b.spans) == 0 {
			return true
		}
		st.Batches++
		select {
		case work <- b:
		case <-ctx.Done():
			return false
		}
		return next()
	}
	var idBuf [16]byte
	nextBig := 0
	for run := uint64(0); st.Spans < cfg.Spans; run++ {
		// Large run j goes out once the load passes (j+½)/len of its spans.
		t := &normal[int(run%uint64(len(normal)))]
		remaining := cfg.Spans - st.Spans - sumSizes(cfg.LargeRuns[nextBig:])
		size := min(len(t.spans), remaining)
		isBig := nextBig < len(bigs) && (size <= 0 || // only large runs are left
			float64(st.Spans) >= (float64(nextBig)+0.5)/float64(len(bigs))*float64(cfg.Spans-sumSizes(cfg.LargeRuns)))
		if isBig {
			t, size = &bigs[nextBig], len(bigs[nextBig].spans)
		}
		startNs := uint64(since.UnixNano()) + uint64(float64(st.Spans)/float64(cfg.Spans)*float64(window))
		h1 := splitmix(uint64(cfg.Seed) ^ run*0x9e3779b97f4a7c15)
		h2 := splitmix(h1 ^ 0xda942042e4dd58b5)
		for k := 0; k < 8; k++ {
			idBuf[k] = byte(h1 >> (56 - 8*k))
			idBuf[8+k] = byte(h2 >> (56 - 8*k))
		}
		traceID := hex.EncodeToString(idBuf[:])
		conv := ""
		if t.conv != "" {
			// Runs cloned from one conversation in the same pass over the
			// templates share a conversation.
			pass := run / uint64(len(normal))
			conv = fmt.Sprintf("%.20s%016x", t.conv, splitmix(uint64(cfg.Seed)^pass))
		}
		before := len(b.contents)
		b.spans, b.contents = t.clone(b.spans, b.contents, size, traceID, conv, splitmix(h2), startNs, version, cfg.Content)
		if run%NeedleEvery == NeedleEvery/2 && len(b.contents) > before {
			// A rare phrase, for the search of a needle in the content.
			b.contents[before].Value += " " + Needle
			st.Needles = append(st.Needles, Run{TraceID: traceID, Spans: size, Start: time.Unix(0, int64(startNs)).UTC()})
		}
		st.Spans += size
		st.Contents += len(b.contents) - before
		st.Runs++
		if isBig {
			st.Large = append(st.Large, Run{TraceID: traceID, Spans: size, Start: time.Unix(0, int64(startNs)).UTC()})
			nextBig++
		}
		if len(b.spans) >= cfg.BatchRows && !ship() {
			return st
		}
	}
	ship()
	return st
}

func sumSizes(sizes []int) int {
	n := 0
	for _, s := range sizes {
		n += s
	}
	return n
}

// splitmix is SplitMix64's finalizer: a cheap, well-mixed hash of x.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
