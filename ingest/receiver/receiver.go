// Package receiver is tally's OTLP/HTTP trace receiver: an http.Handler for
// POST /v1/traces that follows the OTLP/HTTP specification and the OTel
// Collector's otlpreceiver.
//
// A request goes through these steps, each answering its own status:
//
//	method          POST only                                   405 + Allow: POST
//	authenticate    Authenticator (nil: project "default")      401 / 403
//	content type    application/x-protobuf, application/protobuf,
//	                application/json (parameters ignored)       415
//	content coding  gzip, identity or none                      415 (see below)
//	size            Content-Length, compressed and decompressed
//	                bytes each at most Limits.MaxBodyBytes       413
//	in-flight bytes Config.MaxInFlightBytes over all requests,
//	                reserved as the bytes arrive                429 + Retry-After
//	body rate       Config.MinBodyRate after BodyRateGrace      408, connection closed
//	decode          protobuf: ingest/wire, pdata on failure;
//	                JSON: pdata, nesting bounded                400
//	spans           at most Limits.MaxSpansPerRequest           413
//	normalize       invalid spans dropped                       200 + partial_success
//	sink            Accept returns once the batch is durable    200, or 429/503 + Retry-After
//
// An empty body, or a request without spans, is answered 200 without calling
// the normalizer or the sink. A request whose spans are all invalid is still
// answered 200, with every span counted in partial_success.
//
// Protobuf bodies are decoded by ingest/wire's Decoder straight into the
// flat Traces the normalizer reads; the rows' strings point into a copy of
// the body the batch owns. The wire decoder accepts exactly what pdata
// accepts; when it fails, pdata decodes the body again so that the repair
// below and pdata's error messages apply as before.
//
// pdata refuses a whole request when one span has an id of the wrong length;
// OTLP wants that span rejected and the rest kept. So when decoding fails the
// receiver tries once to drop the spans with wrong-length trace, span, parent
// or link ids and decode the rest; the dropped spans join partial_success.
// Only requests that fail to decode pay for this.
//
// Successful answers are an ExportTraceServiceResponse and error answers a
// google.rpc.Status, both in the request's encoding (protobuf or JSON). When
// the request's content type is not one tally speaks, errors are plain text,
// as in the Collector.
//
// An unsupported Content-Encoding is answered 415, as RFC 9110 §15.5.16
// prescribes for an unsupported content coding (the Collector answers 400;
// both are non-retryable for OTLP exporters).
//
// A 200 is never sent for spans the sink did not accept: every sink error
// becomes 503 (or the status the error carries) with Retry-After.
//
// A panic while serving a request is recovered, logged, and answered 500; the
// handler keeps serving.
package receiver

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/tallyhq/tally/ingest"
	"github.com/tallyhq/tally/ingest/wire"
	"github.com/tallyhq/tally/support/access"
)

// Defaults for the Config fields left zero.
const (
	// DefaultMaxInFlightBytes is 32 MiB: each admitted request holds about
	// three copies of its body (wire, decoded traces, log record), so this
	// bounds about 100 MiB of memory and keeps RSS under 300 MiB with 1 MiB
	// tool results; a single body at --max-body-bytes (20 MiB) still fits.
	DefaultMaxInFlightBytes = 32 << 20
	DefaultMaxJSONDepth     = 128
	DefaultRetryAfter       = 5 * time.Second
	DefaultAcceptTimeout    = 30 * time.Second
	DefaultMinBodyRate      = 16 << 10
	DefaultBodyRateGrace    = 5 * time.Second
)

// Sink takes a normalized batch and returns only once it is accepted durably,
// or an error. An error that implements HTTPStatus() int (a 4xx or 5xx)
// chooses the answer's status, and one that implements
// RetryAfter() time.Duration chooses its Retry-After; any other error is
// answered 503 with Config.RetryAfter. See RetryError.
type Sink interface {
	Accept(ctx context.Context, b ingest.Batch) error
}

// Normalizer turns decoded OTLP traces of a project into rows appended to
// dst's slices (empty, and with capacity left by an earlier request when
// the sink copies), reporting the spans it dropped as invalid.
// ingest.NormalizeTracesInto, bound to its limits and pricer, is the
// production one. The rows may keep strings of tr.
type Normalizer func(dst ingest.Batch, tr wire.Traces, project string) (ingest.Batch, ingest.Rejected)

// Authenticator decides which project a request writes to. An error wrapping
// access.ErrUnauthenticated is answered 401, one wrapping access.ErrForbidden 403, one
// implementing HTTPStatus() int that status; any other error is treated as
// the authenticator being unavailable and answered 503 with Retry-After, so
// that exporters keep their data and retry.
type Authenticator interface {
	Authenticate(r *http.Request) (project string, err error)
}

// Config configures a Handler. Zero fields take their defaults.
type Config struct {
	// Limits bounds a request. The receiver applies MaxBodyBytes (to
	// Content-Length, to the compressed body, and to the body after
	// decompression) and MaxSpansPerRequest; the others are the
	// normalizer's. Zero fields take ingest.DefaultLimits().
	Limits ingest.Limits

	// MaxInFlightBytes bounds the request body bytes held by all requests
	// being served at once (default 32 MiB). A request reserves its body
	// bytes as they arrive (one read ahead, at most 32 KiB), never from the
	// Content-Length it declares, and keeps the reservation until it is
	// answered; when the budget is exhausted it is answered 429 with
	// Retry-After at once rather than queued, so memory stays bounded and
	// one huge request, or many slow ones, cannot starve the others. It is
	// raised to MaxBodyBytes+1 when smaller, so a request at the body limit
	// can always be served on its own.
	MaxInFlightBytes int64

	// MaxJSONDepth bounds how deeply objects and arrays of a JSON body nest
	// (default 128: the envelope takes 10 levels and each nested kvlist
	// attribute value 4, so about 29 nested values, near the protobuf
	// decoder's own limit). Deeper bodies are answered 400 before decoding.
	MaxJSONDepth int

	// RetryAfter is sent with 429 and 503 answers whose cause does not say
	// how long to wait (default 5s). It is rounded up to whole seconds.
	RetryAfter time.Duration

	// AcceptTimeout bounds how long Sink.Accept may take (default 30s);
	// past it the request is answered 503 with Retry-After.
	AcceptTimeout time.Duration

	// MinBodyRate is the slowest a request body may arrive, in bytes per
	// second on the wire (compressed), averaged from the start of the body:
	// after BodyRateGrace, n bytes must have arrived by BodyRateGrace +
	// n/MinBodyRate. A slower body is answered 408 and its connection
	// closed, so a trickling client holds neither a connection nor budget
	// until the server's read timeout (default 16 KiB/s; negative: no
	// minimum).
	MinBodyRate int64

	// BodyRateGrace is how long any body may take before MinBodyRate
	// applies (default 5s).
	BodyRateGrace time.Duration

	// SinkCopies says the sink keeps nothing of a batch's memory once
	// Accept returns: it copies what it stores, as the durable log does
	// (it encodes the rows into a record). The rows' strings then point
	// into the request's pooled buffer until Accept returns, and the
	// buffer goes back to the pool after it, instead of each protobuf
	// body being copied once more for rows that outlive the request. Leave
	// it false for a sink that queues the rows themselves.
	SinkCopies bool
}

// withDefaults returns c with every zero field replaced by its default.
func (c Config) withDefaults() Config {
	def := ingest.DefaultLimits()
	if c.Limits.MaxBodyBytes <= 0 {
		c.Limits.MaxBodyBytes = def.MaxBodyBytes
	}
	if c.Limits.MaxSpansPerRequest <= 0 {
		c.Limits.MaxSpansPerRequest = def.MaxSpansPerRequest
	}
	if c.MaxInFlightBytes <= 0 {
		c.MaxInFlightBytes = DefaultMaxInFlightBytes
	}
	if c.MaxInFlightBytes < c.Limits.MaxBodyBytes+1 {
		c.MaxInFlightBytes = c.Limits.MaxBodyBytes + 1
	}
	if c.MaxJSONDepth <= 0 {
		c.MaxJSONDepth = DefaultMaxJSONDepth
	}
	if c.RetryAfter <= 0 {
		c.RetryAfter = DefaultRetryAfter
	}
	if c.AcceptTimeout <= 0 {
		c.AcceptTimeout = DefaultAcceptTimeout
	}
	if c.MinBodyRate == 0 {
		c.MinBodyRate = DefaultMinBodyRate
	}
	if c.BodyRateGrace <= 0 {
		c.BodyRateGrace = DefaultBodyRateGrace
	}
	return c
}

// Handler serves POST /v1/traces. It is safe for concurrent use.
type Handler struct {
	cfg       Config
	normalize Normalizer
	sink      Sink
	auth      Authenticator
	log       *slog.Logger
	metrics   *Metrics
	inFlight  *semaphore.Weighted

	buffers     sync.Pool // *bytes.Buffer holding request bodies
	gzipReaders sync.Pool // *gzip.Reader
	decoders    sync.Pool // *wire.Decoder
	batches     sync.Pool // *ingest.Batch, emptied: rows' memory for the next request (Config.SinkCopies)
}

// New returns a Handler that decodes requests, normalizes them with normalize
// and hands them to sink. auth, logger and metrics may be nil (no
// authentication: every request belongs to access.DefaultProject; no logs; no
// metrics). normalize and sink are required: New panics without them.
func New(cfg Config, normalize Normalizer, sink Sink, auth Authenticator, logger *slog.Logger, metrics *Metrics) *Handler {
	if normalize == nil || sink == nil {
		panic("receiver.New: normalize and sink are required")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg = cfg.withDefaults()
	return &Handler{
		cfg:       cfg,
		normalize: normalize,
		sink:      sink,
		auth:      auth,
		log:       logger,
		metrics:   metrics,
		inFlight:  semaphore.NewWeighted(cfg.MaxInFlightBytes),
	}
}

// ServeHTTP answers one OTLP/HTTP export request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	format := formatOf(r.Header.Get("Content-Type"))
	rejected, fail := h.serveRecovering(http.NewResponseController(w), r, format)
	if fail != nil {
		h.writeError(w, r, format, fail)
		return
	}
	h.writeSuccess(w, format, rejected)
}

// serveRecovering runs serve, turning a panic into a 500 answer. The response
// writer is untouched until serve returns, so a 500 can always be written.
func (h *Handler) serveRecovering(rc *http.ResponseController, r *http.Request, format wireFormat) (rejected ingest.Rejected, fail *requestError) {
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		if v == http.ErrAbortHandler {
			panic(v)
		}
		h.log.Error("otlp receiver: panic while serving a request",
			slog.Any("panic", v), slog.String("stack", string(debug.Stack())))
		fail = &requestError{status: http.StatusInternalServerError, reason: "panic",
			message: "internal error while processing the request"}
	}()
	return h.serve(rc, r, format)
}

// serve does the work of one request and says what to answer. It does not
// write to the response; rc only cuts a body that arrives too slowly.
func (h *Handler) serve(rc *http.ResponseController, r *http.Request, format wireFormat) (ingest.Rejected, *requestError) {
	if r.Method != http.MethodPost {
		return ingest.Rejected{}, &requestError{status: http.StatusMethodNotAllowed, reason: "method",
			message: fmt.Sprintf("method %s not allowed: use POST", r.Method)}
	}
	project, fail := h.authenticate(r)
	if fail != nil {
		return ingest.Rejected{}, fail
	}
	if format == formatUnknown {
		return ingest.Rejected{}, &requestError{status: http.StatusUnsupportedMediaType, reason: "content_type",
			message: fmt.Sprintf("unsupported content type %q: use application/x-protobuf or application/json",
				r.Header.Get("Content-Type"))}
	}
	gzipped, ok := gzipEncoded(r.Header.Get("Content-Encoding"))
	if !ok {
		return ingest.Rejected{}, &requestError{status: http.StatusUnsupportedMediaType, reason: "content_encoding",
			message: fmt.Sprintf("unsupported content encoding %q: use gzip or none", r.Header.Get("Content-Encoding"))}
	}
	limit := h.cfg.Limits.MaxBodyBytes
	if r.ContentLength > limit {
		return ingest.Rejected{}, &requestError{status: http.StatusRequestEntityTooLarge, reason: "too_large",
			message: fmt.Sprintf("request body of %d bytes exceeds the limit of %d bytes", r.ContentLength, limit)}
	}

	res := &reservation{sem: h.inFlight, metrics: h.metrics}
	defer res.release()
	buf, fail := h.readBody(rc, r, gzipped, res)
	if fail != nil {
		return ingest.Rejected{}, fail
	}
	body := buf.Bytes()
	// The wire decoder's strings, and so the rows', point into a protobuf
	// body: with a sink that copies they may point into the pooled buffer
	// until Accept returns; otherwise they get a copy of their own and the
	// buffer goes back at once (as for JSON, whose pdata copies).
	borrowed := format != formatJSON && h.cfg.SinkCopies
	if format != formatJSON && !borrowed {
		body = bytes.Clone(body)
	}
	dec := h.getDecoder()
	defer h.putDecoder(dec)
	td, dropped, err := decode(body, format, h.cfg.MaxJSONDepth, dec)
	if borrowed {
		defer h.putBuffer(buf)
	} else {
		h.putBuffer(buf)
	}
	if err != nil {
		return ingest.Rejected{}, &requestError{status: http.StatusBadRequest, reason: "decode", message: err.Error()}
	}

	spans := td.SpanCount() + dropped.Spans
	if spans == 0 {
		return ingest.Rejected{}, nil
	}
	if maxSpans := h.cfg.Limits.MaxSpansPerRequest; spans > maxSpans {
		h.metrics.refused(spans)
		return ingest.Rejected{}, &requestError{status: http.StatusRequestEntityTooLarge, reason: "too_many_spans",
			message: fmt.Sprintf("request has %d spans, more than the limit of %d spans per request", spans, maxSpans)}
	}

	var dst ingest.Batch
	if borrowed { // the sink copies: the rows' memory is free once Accept returns
		dst = h.getBatch()
	}
	batch, rejected := h.normalize(dst, td, project)
	if borrowed {
		defer h.putBatch(batch)
	}
	if len(batch.Spans) > 0 {
		if fail := h.accept(r.Context(), batch); fail != nil {
			h.metrics.refused(spans)
			return ingest.Rejected{}, fail
		}
	}
	rejected = mergeRejected(dropped, rejected)
	h.metrics.spans(len(batch.Spans), rejected.Spans)
	return rejected, nil
}

// mergeRejected adds up the spans dropped while decoding and by the
// normalizer.
func mergeRejected(a, b ingest.Rejected) ingest.Rejected {
	msg := a.Message
	if msg != "" && b.Message != "" {
		msg += "; "
	}
	return ingest.Rejected{Spans: a.Spans + b.Spans, Message: msg + b.Message}
}

// authenticate returns the request's project, or the answer refusing it.
func (h *Handler) authenticate(r *http.Request) (string, *requestError) {
	if h.auth == nil {
		return access.DefaultProject, nil
	}
	project, err := h.auth.Authenticate(r)
	if err == nil {
		return project, nil
	}
	var withStatus interface{ HTTPStatus() int }
	switch {
	case errors.Is(err, access.ErrUnauthenticated):
		return "", &requestError{status: http.StatusUnauthorized, reason: "unauthenticated", message: err.Error()}
	case errors.Is(err, access.ErrForbidden):
		return "", &requestError{status: http.StatusForbidden, reason: "forbidden", message: err.Error()}
	case errors.As(err, &withStatus) && validErrorStatus(withStatus.HTTPStatus()):
		return "", &requestError{status: withStatus.HTTPStatus(), reason: "auth", message: err.Error(),
			retryAfter: h.retryAfterOf(err)}
	default:
		h.log.Warn("otlp receiver: authenticator failed", slog.Any("error", err))
		return "", &requestError{status: http.StatusServiceUnavailable, reason: "auth_unavailable",
			message: "authentication is unavailable; retry later", retryAfter: h.cfg.RetryAfter}
	}
}

// accept hands batch to the sink and maps its failure to an answer that is
// never 200.
func (h *Handler) accept(ctx context.Context, batch ingest.Batch) *requestError {
	ctx, cancel := context.WithTimeout(ctx, h.cfg.AcceptTimeout)
	defer cancel()
	err := h.sink.Accept(ctx, batch)
	if err == nil {
		return nil
	}
	var withStatus interface{ HTTPStatus() int }
	if errors.As(err, &withStatus) && validErrorStatus(withStatus.HTTPStatus()) {
		h.log.Debug("otlp receiver: sink refused a batch", slog.Int("status", withStatus.HTTPStatus()), slog.Any("error", err))
		return &requestError{status: withStatus.HTTPStatus(), reason: "sink", message: err.Error(),
			retryAfter: h.retryAfterOf(err)}
	}
	h.log.Warn("otlp receiver: sink failed", slog.Int("spans", len(batch.Spans)), slog.Any("error", err))
	return &requestError{status: http.StatusServiceUnavailable, reason: "sink",
		message: "spans were not stored; retry later", retryAfter: h.retryAfterOf(err)}
}

// retryAfterOf is the wait err asks for, or the configured default.
func (h *Handler) retryAfterOf(err error) time.Duration {
	var withRetry interface{ RetryAfter() time.Duration }
	if errors.As(err, &withRetry) && withRetry.RetryAfter() > 0 {
		return withRetry.RetryAfter()
	}
	return h.cfg.RetryAfter
}

// getBuffer returns an empty pooled buffer.
func (h *Handler) getBuffer() *bytes.Buffer {
	if b, ok := h.buffers.Get().(*bytes.Buffer); ok {
		return b
	}
	return new(bytes.Buffer)
}

// maxPooledBuffer is the largest buffer kept for reuse; larger ones, grown by
// rare big requests, are left to the garbage collector so that the pool does
// not pin their memory.
const maxPooledBuffer = 4 << 20

// putBuffer returns b to the pool.
func (h *Handler) putBuffer(b *bytes.Buffer) {
	if b.Cap() > maxPooledBuffer {
		return
	}
	b.Reset()
	h.buffers.Put(b)
}

// maxPooledSpans is the most span rows a pooled batch keeps room for: the
// SDKs' export batches are 512 spans by default, and a rare larger request
// leaves its memory to the garbage collector.
const maxPooledSpans = 4096

// getBatch returns an empty batch, with room for rows when the pool has one.
func (h *Handler) getBatch() ingest.Batch {
	if b, ok := h.batches.Get().(*ingest.Batch); ok {
		return *b
	}
	return ingest.Batch{}
}

// putBatch empties b (its rows point into a request body) and pools it.
func (h *Handler) putBatch(b ingest.Batch) {
	if cap(b.Spans) == 0 || cap(b.Spans) > maxPooledSpans || cap(b.Contents) > 2*maxPooledSpans {
		return
	}
	e := b.Emptied()
	h.batches.Put(&e)
}

// getDecoder returns a pooled protobuf decoder.
func (h *Handler) getDecoder() *wire.Decoder {
	if d, ok := h.decoders.Get().(*wire.Decoder); ok {
		return d
	}
	return new(wire.Decoder)
}

// putDecoder returns d to the pool, after Reset so that it does not keep the
// request's body reachable.
func (h *Handler) putDecoder(d *wire.Decoder) {
	d.Reset()
	h.decoders.Put(d)
}

// getGzipReader returns a pooled gzip reader reading from src.
func (h *Handler) getGzipReader(src io.Reader) (*gzip.Reader, error) {
	if zr, ok := h.gzipReaders.Get().(*gzip.Reader); ok {
		if err := zr.Reset(src); err != nil {
			h.gzipReaders.Put(zr)
			return nil, err
		}
		return zr, nil
	}
	return gzip.NewReader(src)
}
