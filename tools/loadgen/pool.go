package loadgen

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/tallyhq/tally/tools/demo"
)

// poolBase is the start time of the runs in the templates; every request
// shifts its timestamps so that its latest one is the time it is sent.
var poolBase = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// minFillerRun is the smallest natural run size; a request's last run is
// generated to fill exactly what remains when a natural run would not fit.
const minFillerRun = 10

// template is one prebuilt ExportTraceServiceRequest body and where its ids
// and timestamps are, so each request can be a copy with fresh ids and times.
type template struct {
	body     []byte
	traceIDs []int // offsets of 16-byte trace ids
	spanIDs  []int // offsets of 8-byte span and parent span ids
	times    []int // offsets of little-endian fixed64 timestamps
	spans    int
	latest   uint64 // the latest timestamp in the body, Unix ns
}

// buildPool builds size request bodies of exactly requestSpans spans each,
// made of whole demo runs (so every trace is complete within a request).
func buildPool(seed int64, requestSpans, size int) ([]template, error) {
	// Natural runs average about 30 spans; generate enough for the pool.
	runs := demo.Generate(demo.Config{Runs: size*requestSpans/25 + 4, Seed: seed, Start: poolBase})
	next, fillers := 0, 0
	pool := make([]template, 0, size)
	for len(pool) < size {
		var batch []demo.Run
		for remaining := requestSpans; remaining > 0; {
			var r demo.Run
			n := 0
			if next < len(runs) {
				r, n = runs[next], runs[next].SpanCount()
			}
			if n == 0 || n > remaining || remaining-n < minFillerRun {
				fillers++
				r = demo.Generate(demo.Config{Runs: 1, Seed: seed ^ int64(fillers)<<32 ^ 0x7a11e7, Start: poolBase, Spans: remaining})[0]
				n = remaining
			} else {
				next++
			}
			batch = append(batch, r)
			remaining -= n
		}
		body, err := proto.Marshal(demo.ExportRequest(batch))
		if err != nil {
			return nil, fmt.Errorf("loadgen: encode request: %w", err)
		}
		tpl, err := locate(body)
		if err != nil {
			return nil, fmt.Errorf("loadgen: index request: %w", err)
		}
		if tpl.spans != requestSpans {
			return nil, fmt.Errorf("loadgen: built a request of %d spans, want %d", tpl.spans, requestSpans)
		}
		pool = append(pool, tpl)
	}
	return pool, nil
}

// render writes into dst (reused) request n's body: the template with trace
// ids XORed with a mask unique to n, span ids XORed with another, and every
// timestamp moved so that the latest one is now.
//
// Trace ids stay unique across requests: request n's mask is salt with n
// XORed into its low 8 bytes, so two requests from the same template differ,
// and two different templates' ids would collide only if their high 8 bytes
// were equal (chance 2⁻⁶⁴). Within a request, the same mask keeps parents
// pointing at their spans.
func (t *template) render(dst []byte, n uint64, salt [16]byte, now time.Time) []byte {
	dst = append(dst[:0], t.body...)
	traceMask := salt
	binary.BigEndian.PutUint64(traceMask[8:], binary.BigEndian.Uint64(salt[8:])^n)
	var spanMask [8]byte
	binary.BigEndian.PutUint64(spanMask[:], mix(n^binary.BigEndian.Uint64(salt[:8])))
	for _, off := range t.traceIDs {
		for i := range 16 {
			dst[off+i] ^= traceMask[i]
		}
	}
	for _, off := range t.spanIDs {
		for i := range 8 {
			dst[off+i] ^= spanMask[i]
		}
	}
	delta := uint64(now.UnixNano()) - t.latest
	for _, off := range t.times {
		binary.LittleEndian.PutUint64(dst[off:], binary.LittleEndian.Uint64(dst[off:])+delta)
	}
	return dst
}

// mix is splitmix64's finalizer: distinct inputs give distinct outputs.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// OTLP field numbers (opentelemetry-proto trace/v1 and collector/trace/v1).
const (
	fieldResourceSpans  = 1 // ExportTraceServiceRequest.resource_spans
	fieldScopeSpans     = 2 // ResourceSpans.scope_spans
	fieldSpans          = 2 // ScopeSpans.spans
	fieldTraceID        = 1 // Span.trace_id, Span.Link.trace_id
	fieldSpanID         = 2 // Span.span_id, Span.Link.span_id
	fieldParentSpanID   = 4 // Span.parent_span_id
	fieldStartTime      = 7 // Span.start_time_unix_nano
	fieldEndTime        = 8 // Span.end_time_unix_nano
	fieldEvents         = 11
	fieldLinks          = 13
	fieldEventTimestamp = 1 // Span.Event.time_unix_nano
)

// locate finds the ids and timestamps in an encoded request.
func locate(body []byte) (template, error) {
	t := template{body: body}
	err := fields(body, 0, func(num protowire.Number, off int, v []byte) error {
		if num != fieldResourceSpans {
			return nil
		}
		return fields(v, off, func(num protowire.Number, off int, v []byte) error {
			if num != fieldScopeSpans {
				return nil
			}
			return fields(v, off, func(num protowire.Number, off int, v []byte) error {
				if num != fieldSpans {
					return nil
				}
				t.spans++
				return t.span(v, off)
			})
		})
	})
	return t, err
}

func (t *template) span(b []byte, base int) error {
	return fields(b, base, func(num protowire.Number, off int, v []byte) error {
		switch {
		case num == fieldTraceID && len(v) == 16:
			t.traceIDs = append(t.traceIDs, off)
		case (num == fieldSpanID || num == fieldParentSpanID) && len(v) == 8:
			t.spanIDs = append(t.spanIDs, off)
		case num == fieldStartTime || num == fieldEndTime:
			t.time(off, v)
		case num == fieldEvents:
			return fields(v, off, func(num protowire.Number, off int, v []byte) error {
				if num == fieldEventTimestamp {
					t.time(off, v)
				}
				return nil
			})
		case num == fieldLinks:
			return fields(v, off, func(num protowire.Number, off int, v []byte) error {
				switch {
				case num == fieldTraceID && len(v) == 16:
					t.traceIDs = append(t.traceIDs, off)
				case num == fieldSpanID && len(v) == 8:
					t.spanIDs = append(t.spanIDs, off)
				}
				return nil
			})
		}
		return nil
	})
}

func (t *template) time(off int, v []byte) {
	if len(v) != 8 {
		return
	}
	t.times = append(t.times, off)
	t.latest = max(t.latest, binary.LittleEndian.Uint64(v))
}

// fields calls visit for each length-delimited or fixed64 field of the
// message b, with the offset of its value in the whole body (base + offset in b).
func fields(b []byte, base int, visit func(num protowire.Number, off int, v []byte) error) error {
	for pos := 0; pos < len(b); {
		num, typ, n := protowire.ConsumeTag(b[pos:])
		if n < 0 {
			return fmt.Errorf("bad tag at %d: %w", base+pos, protowire.ParseError(n))
		}
		pos += n
		switch typ {
		case protowire.BytesType:
			v, m := protowire.ConsumeBytes(b[pos:])
			if m < 0 {
				return fmt.Errorf("bad field %d at %d: %w", num, base+pos, protowire.ParseError(m))
			}
			if err := visit(num, base+pos+m-len(v), v); err != nil {
				return err
			}
			pos += m
		case protowire.Fixed64Type:
			if len(b)-pos < 8 {
				return errors.New("truncated fixed64")
			}
			if err := visit(num, base+pos, b[pos:pos+8]); err != nil {
				return err
			}
			pos += 8
		default:
			m := protowire.ConsumeFieldValue(num, typ, b[pos:])
			if m < 0 {
				return fmt.Errorf("bad field %d at %d: %w", num, base+pos, protowire.ParseError(m))
			}
			pos += m
		}
	}
	return nil
}
