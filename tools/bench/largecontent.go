package bench

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// largeContentBody is one gzip OTLP request of 8 tool spans, each carrying
// a 1 MiB tool result (repetitive, so about 17 KB compressed as in issue
// 19's report); request i gets span ids of its own.
func largeContentBody(i int) ([]byte, error) {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "bench-large-content")
	ss := rs.ScopeSpans().AppendEmpty()
	result := strings.Repeat(fmt.Sprintf("row %08d: the fetched page says nothing new; ", i), (1<<20)/48)
	now := time.Now()
	for s := range 8 {
		sp := ss.Spans().AppendEmpty()
		var trace pcommon.TraceID
		binary.BigEndian.PutUint64(trace[8:], uint64(i+1))
		var id pcommon.SpanID
		binary.BigEndian.PutUint64(id[:], uint64(i*8+s+1))
		sp.SetTraceID(trace)
		sp.SetSpanID(id)
		sp.SetName("execute_tool fetch")
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(now))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(now.Add(time.Second)))
		sp.Attributes().PutStr("gen_ai.operation.name", "execute_tool")
		sp.Attributes().PutStr("gen_ai.tool.name", "fetch")
		sp.Attributes().PutStr("gen_ai.tool.call.result", result)
	}
	raw, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// largeContentFigures is issue 19's large-content load without an outage:
// cfg.Concurrency clients send cfg.LargeContentRequests requests of 8 spans
// with 1 MiB tool results each (retrying 429 and 503 after a short wait), and
// the figure is tally serve's peak RSS until every span is stored, with the
// default --batch-bytes and memory limit.
// It runs on the server only: the suite counts the stored spans while tally
// runs.
func largeContentFigures(ctx context.Context, cfg Config, tg *target, res *Results) error {
	const id, name = "memory.large_content_peak_rss", "tally serve peak RSS, spans with 1 MiB tool results"
	db := cfg.DBPrefix + "large"
	store, err := tg.open(ctx, db)
	if err != nil {
		return err
	}
	defer store.Close()
	t, err := cfg.startTally(ctx, tg, db, "large", false)
	if err != nil {
		return err
	}
	cfg.logf("large content: %d requests of 8 spans × 1 MiB, concurrency %d", cfg.LargeContentRequests, cfg.Concurrency)
	sampler := sampleRSS(t, 50*time.Millisecond)
	var (
		mu        sync.Mutex
		firstErr  error
		refused   int
		wireBytes int
		next      = make(chan int)
		wg        sync.WaitGroup
	)
	for range cfg.Concurrency {
		wg.Go(func() {
			for i := range next {
				body, err := largeContentBody(i)
				if err == nil {
					var n int
					n, err = postUntilStored(ctx, t.URL, body)
					mu.Lock()
					refused += n
					wireBytes += len(body)
					mu.Unlock()
				}
				if err != nil {
					mu.Lock()
					firstErr = cmpErr(firstErr, err)
					mu.Unlock()
				}
			}
		})
	}
	began := time.Now()
	for i := range cfg.LargeContentRequests {
		next <- i
	}
	close(next)
	wg.Wait()
	want := uint64(8 * cfg.LargeContentRequests)
	stored, _, qerr := waitQueryable(ctx, store, want)
	elapsed := time.Since(began)
	sampled := sampler()
	peak, perr := t.PeakRSS()
	idle, _ := t.RSS()
	if err := t.Stop(); err != nil {
		return err
	}
	switch {
	case firstErr != nil:
		return fmt.Errorf("large content: %w", firstErr)
	case qerr != nil:
		return fmt.Errorf("large content: %w", qerr)
	case perr != nil:
		return perr
	}
	res.add(Figure{ID: id, Name: name, Value: mib(peak), Unit: "MiB", Goal: "≤ 300", Met: atMost(mib(peak), 300),
		Available: true,
		Inputs: map[string]any{"requests": cfg.LargeContentRequests, "spans_per_request": 8, "tool_result_bytes": 1 << 20,
			"concurrency": cfg.Concurrency, "gzip": true, "request_wire_bytes": wireBytes / max(1, cfg.LargeContentRequests)},
		Detail: splitDetail(map[string]any{"source": "VmHWM", "rss_after_mib": mib(idle),
			"spans_stored_final": stored, "refused_429_503_retried": refused, "elapsed_s": elapsed.Seconds()}, sampled)})
	return nil
}

// cmpErr keeps the first error.
func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// postUntilStored POSTs body until tally answers 200, waiting 200 ms after
// each 429 or 503; it returns how many times it was refused.
func postUntilStored(ctx context.Context, url string, body []byte) (int, error) {
	for refused := 0; ; refused++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/traces", bytes.NewReader(body))
		if err != nil {
			return refused, err
		}
		req.Header.Set("Content-Type", "application/x-protobuf")
		req.Header.Set("Content-Encoding", "gzip")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return refused, fmt.Errorf("post: %w", err)
		}
		io.Copy(io.Discard, resp.Body) //nolint:errcheck // the status is what counts
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			return refused, nil
		case http.StatusTooManyRequests, http.StatusServiceUnavailable:
			select {
			case <-ctx.Done():
				return refused, ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
		default:
			return refused, fmt.Errorf("post: %s", resp.Status)
		}
	}
}
