// Package ingest turns OTLP trace data into tally's span and content rows:
// it decodes (see package ingest/receiver), normalizes the gen_ai.* attributes
// real SDKs send (Normalize), prices the spans, and hands the rows to the
// durable log and the ClickHouse writer.
package ingest

import (
	"time"

	"github.com/tallyhq/tally/schema"
)

// Batch is what one accepted OTLP request became: span rows and the large
// content values split off them.
type Batch struct {
	Spans    []schema.Span
	Contents []schema.Content
}

// StampVersion sets Version to v on every row whose Version is zero, in
// place. Rows get their version when they are first accepted, so every later
// copy of a row (a replay from the durable log, an INSERT retry) is identical.
func (b Batch) StampVersion(v uint64) {
	for i := range b.Spans {
		if b.Spans[i].Version == 0 {
			b.Spans[i].Version = v
		}
	}
	for i := range b.Contents {
		if b.Contents[i].Version == 0 {
			b.Contents[i].Version = v
		}
	}
}

// Emptied is b with no rows and its slices' capacity, for the next batch to
// reuse; the rows it had are zeroed first, so the slices keep none of their
// strings (and so no request body or log record) alive.
func (b Batch) Emptied() Batch {
	clear(b.Spans)
	clear(b.Contents)
	return Batch{Spans: b.Spans[:0], Contents: b.Contents[:0]}
}

// Rejected counts the spans of a request that were dropped as invalid, with a
// message naming the first problems, for OTLP's partial_success.
type Rejected struct {
	Spans   int
	Message string
}

// Limits bounds what one request and one span may carry. Every limit is
// explicit and configurable; a value past a per-span limit is truncated with a
// marker or the span is rejected, as documented on each field.
type Limits struct {
	MaxBodyBytes       int64 // request body after decompression; over it: 413
	MaxSpansPerRequest int   // over it: the whole request is refused with 413
	MaxAttrValueBytes  int   // longer string attribute values are truncated with TruncationMarker
	MaxContentBytes    int   // longer content values (tool args/results, messages) are truncated
	MaxAttrsPerSpan    int   // attributes beyond this are dropped and counted in attr "tally.dropped_attributes"
	MaxEventsPerSpan   int   // events beyond this are dropped
	// MaxSpanAge rejects a span that started longer than this before the
	// request arrived (a partial success names it): the store partitions
	// spans by day, so it bounds how many days one request, and the spans
	// of a run arriving together, can touch. 0: no bound.
	MaxSpanAge time.Duration
	// MaxSpanFuture rejects a span that starts more than this after the
	// request arrived (a clock far ahead, or a time in the wrong unit).
	// 0: no bound.
	MaxSpanFuture time.Duration
}

// LatestTime is the latest start or end a span may have, whatever the
// limits: the store keeps a span's start to the second in a 32-bit
// DateTime (to 2106-02-07 06:28:15 UTC), and times past it would wrap to
// 1970 or earlier (issue #41).
var LatestTime = time.Unix(1<<32-1, 0).UTC()

// DefaultLimits are the limits tally runs with unless configured otherwise.
func DefaultLimits() Limits {
	return Limits{
		MaxBodyBytes:       20 << 20,
		MaxSpansPerRequest: 10000,
		MaxAttrValueBytes:  16 << 10,
		MaxContentBytes:    1 << 20,
		MaxAttrsPerSpan:    256,
		MaxEventsPerSpan:   128,
	}
}

// TruncationMarker is appended to a value cut at a limit, so a reader can tell.
const TruncationMarker = "…[truncated by tally]"

// Pricer fills a span's cost fields from its provider, model, start time and
// usage buckets. It is called only for spans that carry usage and no
// client-sent cost. package pricing implements it.
type Pricer interface {
	Apply(s *schema.Span)
}
