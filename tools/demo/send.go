package demo

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Summary is what Send did.
type Summary struct {
	// Runs is the number of runs emitted.
	Runs int
	// Spans is the number of spans the endpoint acknowledged.
	Spans int
	// FailedRuns is the number of emitted runs that end in error (by design).
	FailedRuns int
	// TraceIDs are the hex trace ids of the emitted runs, in order.
	TraceIDs []string
	// Outcomes is the number of evaluation verdicts posted.
	Outcomes int
	// Elapsed is the wall time from the first run to the last acknowledgement.
	Elapsed time.Duration
}

// String is a one-line summary for the terminal.
func (s Summary) String() string {
	rate := 0.0
	if s.Elapsed > 0 {
		rate = float64(s.Spans) / s.Elapsed.Seconds()
	}
	outcomes := ""
	if s.Outcomes > 0 {
		outcomes = fmt.Sprintf(" and %d outcomes", s.Outcomes)
	}
	return fmt.Sprintf("sent %d runs (%d spans, %d runs ending in error)%s in %s (%.0f spans/s)",
		s.Runs, s.Spans, s.FailedRuns, outcomes, s.Elapsed.Round(time.Millisecond), rate)
}

// Send generates the runs of cfg (see Generate) and exports them through the
// OpenTelemetry Go SDK's OTLP/HTTP exporter to cfg.Endpoint + "/v1/traces",
// one tracer provider per service, paced at cfg.Rate runs per second. Once
// every span was exported it posts the verdicts of the evaluation runs to
// tally's API (POST cfg.Endpoint + /api/v1/runs/{trace_id}/outcomes, see
// Trial). It returns with an error if the endpoint refused or failed any
// span (partial_success rejections included) or outcome, or ctx ended.
func Send(ctx context.Context, cfg Config) (Summary, error) {
	if cfg.Endpoint == "" {
		return Summary{}, errors.New("demo: no endpoint")
	}
	runs := Generate(cfg)
	opts := []otlptracehttp.Option{
		otlptracehttp.WithEndpointURL(strings.TrimRight(cfg.Endpoint, "/") + "/v1/traces"),
		otlptracehttp.WithHeaders(cfg.Headers),
	}
	if cfg.Gzip {
		opts = append(opts, otlptracehttp.WithCompression(otlptracehttp.GzipCompression))
	}
	if cfg.JSON {
		opts = append(opts, otlptracehttp.WithEncoding(otlptracehttp.EncodingJSON))
	}
	client, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return Summary{}, fmt.Errorf("demo: create OTLP exporter: %w", err)
	}
	exp := &recordingExporter{next: client}
	ids := &idGenerator{fallback: rand.New(rand.NewPCG(uint64(cfg.Seed), 0x5eed))}
	providers := map[string]*sdktrace.TracerProvider{}
	tracerOf := func(r *Run) trace.Tracer {
		tp := providers[r.Service]
		if tp == nil {
			tp = sdktrace.NewTracerProvider(
				sdktrace.WithResource(resource.NewSchemaless(r.Resource...)),
				sdktrace.WithIDGenerator(ids),
				sdktrace.WithSampler(sdktrace.AlwaysSample()),
				sdktrace.WithRawSpanLimits(sdktrace.SpanLimits{
					AttributeValueLengthLimit:   -1,
					AttributeCountLimit:         -1,
					EventCountLimit:             -1,
					LinkCountLimit:              -1,
					AttributePerEventCountLimit: -1,
					AttributePerLinkCountLimit:  -1,
				}),
				sdktrace.WithBatcher(exp,
					sdktrace.WithBlocking(), // never drop a span when the queue is full
					sdktrace.WithBatchTimeout(time.Second),
					sdktrace.WithMaxExportBatchSize(512)),
			)
			providers[r.Service] = tp
		}
		return tp.Tracer(ScopeName)
	}

	sum := Summary{}
	began := time.Now()
	var sendErr error
	for i := range runs {
		if cfg.Rate > 0 {
			due := began.Add(time.Duration(float64(i) / cfg.Rate * float64(time.Second)))
			if err := sleepUntil(ctx, due); err != nil {
				sendErr = err
				break
			}
		} else if err := ctx.Err(); err != nil {
			sendErr = err
			break
		}
		r := &runs[i]
		emit(ctx, tracerOf(r), r.TraceID, &r.Root, true)
		sum.Runs++
		sum.TraceIDs = append(sum.TraceIDs, r.TraceID.String())
		if r.Failed {
			sum.FailedRuns++
		}
	}
	for _, tp := range providers {
		if err := tp.Shutdown(ctx); err != nil && sendErr == nil {
			sendErr = fmt.Errorf("demo: flush spans: %w", err)
		}
	}
	if err := client.Shutdown(ctx); err != nil && sendErr == nil {
		sendErr = fmt.Errorf("demo: shut down exporter: %w", err)
	}
	sum.Elapsed = time.Since(began)
	exported, failed, firstErr := exp.result()
	sum.Spans = exported
	if failed > 0 {
		return sum, fmt.Errorf("demo: %d of %d spans were in export requests %s refused or failed: %w", failed, exported+failed, cfg.Endpoint, firstErr)
	}
	if sendErr != nil {
		return sum, sendErr
	}
	sum.Outcomes, sendErr = postOutcomes(ctx, cfg, runs[:sum.Runs])
	return sum, sendErr
}

// emit records s and its descendants with the tracer, with their ids and
// timestamps.
func emit(ctx context.Context, tr trace.Tracer, traceID trace.TraceID, s *SpanSpec, root bool) {
	ctx = context.WithValue(ctx, idsKey{}, ids{trace: traceID, span: s.SpanID})
	opts := []trace.SpanStartOption{
		trace.WithSpanKind(s.Kind),
		trace.WithTimestamp(s.Start),
		trace.WithAttributes(s.Attributes...),
	}
	if root {
		opts = append(opts, trace.WithNewRoot())
	}
	ctx, span := tr.Start(ctx, s.Name, opts...)
	for i := range s.Events {
		e := &s.Events[i]
		span.AddEvent(e.Name, trace.WithTimestamp(e.Time), trace.WithAttributes(e.Attributes...))
	}
	for i := range s.Children {
		emit(ctx, tr, traceID, &s.Children[i], false)
	}
	span.SetStatus(s.Status, s.StatusMessage)
	span.End(trace.WithTimestamp(s.End))
}

func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// idsKey carries the ids the next span must get through the context.
type idsKey struct{}

type ids struct {
	trace trace.TraceID
	span  trace.SpanID
}

// idGenerator gives every span the id Generate chose for it (carried by the
// context emit starts the span with), so that Send and Generate agree. Spans
// started without one get ids from a PCG seeded with Config.Seed.
type idGenerator struct {
	mu       sync.Mutex
	fallback *rand.Rand
}

// NewIDs implements sdktrace.IDGenerator.
func (g *idGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if v, ok := ctx.Value(idsKey{}).(ids); ok {
		return v.trace, v.span
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var t trace.TraceID
	var s trace.SpanID
	for !t.IsValid() {
		putUint64(t[:8], g.fallback.Uint64())
		putUint64(t[8:], g.fallback.Uint64())
	}
	for !s.IsValid() {
		putUint64(s[:], g.fallback.Uint64())
	}
	return t, s
}

// NewSpanID implements sdktrace.IDGenerator.
func (g *idGenerator) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	if v, ok := ctx.Value(idsKey{}).(ids); ok {
		return v.span
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var s trace.SpanID
	for !s.IsValid() {
		putUint64(s[:], g.fallback.Uint64())
	}
	return s
}

// recordingExporter passes spans to the OTLP exporter and counts what it
// accepted and refused. Its Shutdown does nothing: several tracer providers
// share it, and Send shuts the OTLP exporter down once they all flushed.
type recordingExporter struct {
	next     sdktrace.SpanExporter
	mu       sync.Mutex
	exported int
	failed   int
	firstErr error
}

// ExportSpans implements sdktrace.SpanExporter.
func (e *recordingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := e.next.ExportSpans(ctx, spans)
	e.mu.Lock()
	defer e.mu.Unlock()
	if err != nil {
		e.failed += len(spans)
		if e.firstErr == nil {
			e.firstErr = err
		}
	} else {
		e.exported += len(spans)
	}
	return err
}

// Shutdown implements sdktrace.SpanExporter.
func (e *recordingExporter) Shutdown(context.Context) error { return nil }

func (e *recordingExporter) result() (exported, failed int, firstErr error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.exported, e.failed, e.firstErr
}
