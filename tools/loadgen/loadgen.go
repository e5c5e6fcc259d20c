// Package loadgen sends OTLP/HTTP load to any tally (or other OTLP receiver):
// protobuf ExportTraceServiceRequests of realistic gen_ai spans (the shapes
// of package demo), at a configured rate, size, concurrency and duration, and
// reports what was acknowledged and how long acknowledgements took.
//
// Request bodies are prebuilt once (a pool of whole demo runs per request);
// each request is a copy with fresh trace and span ids and current
// timestamps, so the generator spends its time sending, not encoding.
package loadgen

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Defaults for the zero values of Config.
const (
	DefaultRequestSpans = 512 // the OTel SDK's default batch size
	DefaultConcurrency  = 4
)

// maxPoolSpans bounds the spans prebuilt into the pool of request bodies.
const maxPoolSpans = 16384

// Config says what load to send. Duration or Requests must bound it.
type Config struct {
	// Endpoint is the OTLP/HTTP base URL; requests go to Endpoint + "/v1/traces".
	Endpoint string
	// Headers are sent with every request, e.g. "Authorization": "Bearer <key>".
	Headers map[string]string
	// RequestSpans is the number of spans per request (default 512).
	RequestSpans int
	// Concurrency is the number of requests in flight at most (default 4).
	Concurrency int
	// Rate is the number of requests started per second; 0 = as fast as the
	// endpoint answers.
	Rate float64
	// Duration stops starting requests after this long (in-flight requests
	// finish). 0 = bound by Requests alone.
	Duration time.Duration
	// Requests stops after this many requests. 0 = bound by Duration alone.
	Requests int
	// Gzip compresses each request body.
	Gzip bool
	// Seed selects the shapes of the prebuilt runs. Ids are fresh on every
	// Run regardless, so repeated runs never resend the same spans.
	Seed int64
}

// Result is what a load run measured.
type Result struct {
	// Echo of the inputs.
	RequestSpans int
	Concurrency  int
	Rate         float64
	Gzip         bool
	// BodyBytes is the mean uncompressed request size.
	BodyBytes int

	// Requests by outcome: Sent = Acknowledged + Rejected + Failed.
	Sent         int
	Acknowledged int // 2xx
	Rejected     int // 4xx (including 429)
	Failed       int // 5xx and network errors
	// Statuses counts responses by HTTP status (0 = no response).
	Statuses map[int]int
	// FirstError describes the first request that was not acknowledged.
	FirstError string

	SpansSent         int
	SpansAcknowledged int // spans of 2xx requests minus partial_success rejections
	SpansRejected     int // partial_success.rejected_spans of 2xx requests

	// Elapsed runs from the first request started to the last one answered.
	Elapsed time.Duration
	// SpansPerSecond is SpansAcknowledged / Elapsed.
	SpansPerSecond float64
	// Latency of acknowledged requests, from sending to the full response.
	LatencyP50, LatencyP90, LatencyP99, LatencyMax time.Duration
}

// String is a readable multi-line summary.
func (r Result) String() string {
	var b strings.Builder
	gz := "off"
	if r.Gzip {
		gz = "on"
	}
	rate := "max"
	if r.Rate > 0 {
		rate = fmt.Sprintf("%g req/s", r.Rate)
	}
	fmt.Fprintf(&b, "loadgen: %d spans/request (%d bytes), concurrency %d, rate %s, gzip %s, %s\n",
		r.RequestSpans, r.BodyBytes, r.Concurrency, rate, gz, r.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(&b, "  requests: sent %d, acknowledged %d, rejected (4xx) %d, failed (5xx/network) %d\n",
		r.Sent, r.Acknowledged, r.Rejected, r.Failed)
	fmt.Fprintf(&b, "  spans:    sent %d, acknowledged %d (%d rejected in partial_success), %.0f spans/s\n",
		r.SpansSent, r.SpansAcknowledged, r.SpansRejected, r.SpansPerSecond)
	fmt.Fprintf(&b, "  latency:  p50 %s  p90 %s  p99 %s  max %s\n",
		ms(r.LatencyP50), ms(r.LatencyP90), ms(r.LatencyP99), ms(r.LatencyMax))
	if len(r.Statuses) > 0 {
		codes := make([]int, 0, len(r.Statuses))
		for c := range r.Statuses {
			codes = append(codes, c)
		}
		sort.Ints(codes)
		var parts []string
		for _, c := range codes {
			name := fmt.Sprint(c)
			if c == 0 {
				name = "network"
			}
			parts = append(parts, fmt.Sprintf("%s×%d", name, r.Statuses[c]))
		}
		fmt.Fprintf(&b, "  statuses: %s\n", strings.Join(parts, " "))
	}
	if r.FirstError != "" {
		fmt.Fprintf(&b, "  first error: %s\n", r.FirstError)
	}
	return b.String()
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond)) }

// Run sends the load cfg describes and reports it. It refuses a Config
// bounded by neither Duration nor Requests. It returns the result so far
// and ctx's error if ctx ends first.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if cfg.Endpoint == "" {
		return Result{}, errors.New("loadgen: no endpoint")
	}
	if cfg.Duration <= 0 && cfg.Requests <= 0 {
		return Result{}, errors.New("loadgen: unbounded: set a duration or a number of requests")
	}
	if cfg.Duration < 0 || cfg.Requests < 0 || cfg.Rate < 0 || cfg.RequestSpans < 0 || cfg.Concurrency < 0 {
		return Result{}, errors.New("loadgen: negative duration, requests, rate, request size or concurrency")
	}
	if cfg.RequestSpans == 0 {
		cfg.RequestSpans = DefaultRequestSpans
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	size := min(32, max(2, maxPoolSpans/cfg.RequestSpans))
	if cfg.Requests > 0 {
		size = min(size, cfg.Requests)
	}
	pool, err := buildPool(cfg.Seed, cfg.RequestSpans, size)
	if err != nil {
		return Result{}, err
	}
	var salt [16]byte
	if _, err := rand.Read(salt[:]); err != nil {
		return Result{}, fmt.Errorf("loadgen: id salt: %w", err)
	}

	transport := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		MaxIdleConns:        cfg.Concurrency,
		MaxIdleConnsPerHost: cfg.Concurrency,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	defer transport.CloseIdleConnections()
	s := &sender{
		cfg:    cfg,
		url:    strings.TrimRight(cfg.Endpoint, "/") + "/v1/traces",
		client: &http.Client{Transport: transport, Timeout: time.Minute},
		pool:   pool,
		salt:   salt,
		start:  time.Now(),
	}
	if cfg.Duration > 0 {
		s.deadline = s.start.Add(cfg.Duration)
	}
	tallies := make([]tally, cfg.Concurrency)
	var wg sync.WaitGroup
	for i := range tallies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.work(ctx, &tallies[i])
		}()
	}
	wg.Wait()
	res := s.result(tallies, time.Since(s.start))
	return res, ctx.Err()
}

// sender is the state the workers share.
type sender struct {
	cfg      Config
	url      string
	client   *http.Client
	pool     []template
	salt     [16]byte
	start    time.Time
	deadline time.Time // zero: none
	next     atomic.Uint64
}

// tally is one worker's counts.
type tally struct {
	sent, acked, rejected, failed int
	spansAcked, spansRejected     int
	bodyBytes                     int
	statuses                      map[int]int
	firstErr                      string
	firstErrAt                    time.Time
	latencies                     []time.Duration
}

func (s *sender) work(ctx context.Context, t *tally) {
	t.statuses = map[int]int{}
	var body, packed bytes.Buffer
	var zw *gzip.Writer
	if s.cfg.Gzip {
		zw, _ = gzip.NewWriterLevel(&packed, gzip.BestSpeed) // BestSpeed is a valid level
	}
	buf := make([]byte, 0, len(s.pool[0].body))
	for {
		n := s.next.Add(1) - 1
		if s.cfg.Requests > 0 && n >= uint64(s.cfg.Requests) {
			return
		}
		if s.cfg.Rate > 0 {
			due := s.start.Add(time.Duration(float64(n) / s.cfg.Rate * float64(time.Second)))
			if !s.deadline.IsZero() && !due.Before(s.deadline) {
				return
			}
			if wait(ctx, due) != nil {
				return
			}
		}
		if ctx.Err() != nil || (!s.deadline.IsZero() && !time.Now().Before(s.deadline)) {
			return
		}
		tpl := &s.pool[n%uint64(len(s.pool))]
		buf = tpl.render(buf, n, s.salt, time.Now())
		payload := buf
		if zw != nil {
			packed.Reset()
			zw.Reset(&packed)
			zw.Write(buf) // writes to a bytes.Buffer do not fail
			zw.Close()
			payload = packed.Bytes()
		}
		body.Reset()
		status, rejected, latency, err := s.post(ctx, payload, &body)
		t.sent++
		t.bodyBytes += len(buf)
		t.statuses[status]++
		switch {
		case err == nil && status/100 == 2:
			t.acked++
			t.spansRejected += rejected
			t.spansAcked += tpl.spans - rejected
			t.latencies = append(t.latencies, latency)
			continue
		case err == nil && status/100 == 4:
			t.rejected++
		default:
			t.failed++
		}
		if t.firstErr == "" {
			if err == nil {
				err = fmt.Errorf("HTTP %d: %s", status, strings.TrimSpace(string(firstLine(body.Bytes()))))
			}
			t.firstErr, t.firstErrAt = err.Error(), time.Now()
		}
	}
}

// post sends one request and returns the HTTP status (0 without a response),
// the partial_success rejected span count of a 2xx answer and the latency.
func (s *sender) post(ctx context.Context, payload []byte, respBody *bytes.Buffer) (int, int, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(payload))
	if err != nil {
		return 0, 0, 0, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if s.cfg.Gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	for k, v := range s.cfg.Headers {
		req.Header.Set(k, v)
	}
	began := time.Now()
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, 0, time.Since(began), err
	}
	_, err = io.Copy(respBody, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	latency := time.Since(began)
	if err != nil {
		return resp.StatusCode, 0, latency, fmt.Errorf("read response: %w", err)
	}
	rejected := 0
	if resp.StatusCode/100 == 2 && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/x-protobuf") {
		var out coltracepb.ExportTraceServiceResponse
		if err := proto.Unmarshal(respBody.Bytes(), &out); err != nil {
			return resp.StatusCode, 0, latency, fmt.Errorf("decode response: %w", err)
		}
		rejected = int(out.GetPartialSuccess().GetRejectedSpans())
	}
	return resp.StatusCode, rejected, latency, nil
}

func (s *sender) result(tallies []tally, elapsed time.Duration) Result {
	r := Result{
		RequestSpans: s.cfg.RequestSpans,
		Concurrency:  s.cfg.Concurrency,
		Rate:         s.cfg.Rate,
		Gzip:         s.cfg.Gzip,
		Statuses:     map[int]int{},
		Elapsed:      elapsed,
	}
	var latencies []time.Duration
	var firstErrAt time.Time
	bodyBytes := 0
	for _, t := range tallies {
		r.Sent += t.sent
		r.Acknowledged += t.acked
		r.Rejected += t.rejected
		r.Failed += t.failed
		r.SpansAcknowledged += t.spansAcked
		r.SpansRejected += t.spansRejected
		bodyBytes += t.bodyBytes
		for c, n := range t.statuses {
			r.Statuses[c] += n
		}
		if t.firstErr != "" && (r.FirstError == "" || t.firstErrAt.Before(firstErrAt)) {
			r.FirstError, firstErrAt = t.firstErr, t.firstErrAt
		}
		latencies = append(latencies, t.latencies...)
	}
	r.SpansSent = r.Sent * s.cfg.RequestSpans
	if r.Sent > 0 {
		r.BodyBytes = bodyBytes / r.Sent
	}
	if elapsed > 0 {
		r.SpansPerSecond = float64(r.SpansAcknowledged) / elapsed.Seconds()
	}
	slices.Sort(latencies)
	r.LatencyP50 = percentile(latencies, 50)
	r.LatencyP90 = percentile(latencies, 90)
	r.LatencyP99 = percentile(latencies, 99)
	if len(latencies) > 0 {
		r.LatencyMax = latencies[len(latencies)-1]
	}
	return r
}

// percentile is the nearest-rank p-th percentile of sorted values: the
// smallest value with at least p% of the values at or below it.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 · n)
	return sorted[max(rank, 1)-1]
}

func wait(ctx context.Context, until time.Time) error {
	d := time.Until(until)
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

func firstLine(b []byte) []byte {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	if len(b) > 200 {
		b = b[:200]
	}
	return b
}
