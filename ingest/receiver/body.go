package receiver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"

	"golang.org/x/sync/semaphore"
)

// errInFlightExhausted reports that the bytes of the requests being served
// already use up Config.MaxInFlightBytes.
var errInFlightExhausted = errors.New("the receiver is at its limit of request bytes in flight")

// tooLargeError reports a body over the limit, before or after
// decompression.
type tooLargeError struct {
	limit        int64
	decompressed bool
}

func (e *tooLargeError) Error() string {
	if e.decompressed {
		return fmt.Sprintf("request body exceeds the limit of %d bytes after decompression", e.limit)
	}
	return fmt.Sprintf("request body exceeds the limit of %d bytes", e.limit)
}

// readBody reads the request body, decompressing it when gzipped, into a
// pooled buffer that the caller returns with putBuffer. Neither the
// compressed nor the decompressed body is read past limit+1 bytes, and every
// byte held is first reserved on res.
func (h *Handler) readBody(r *http.Request, gzipped bool, res *reservation) (*bytes.Buffer, *requestError) {
	limit := h.cfg.Limits.MaxBodyBytes
	buf := h.getBuffer()
	body := r.Body
	if body == nil || (!gzipped && r.ContentLength == 0) {
		return buf, nil
	}

	var src io.Reader = body
	var wire *maxReader
	if gzipped {
		wire = &maxReader{r: body, left: limit + 1, err: &tooLargeError{limit: limit}}
		zr, err := h.getGzipReader(wire)
		if err != nil {
			h.metrics.read(limit+1-wire.left, 0)
			if errors.Is(err, io.EOF) { // an empty body carries no gzip header
				return buf, nil
			}
			h.putBuffer(buf)
			return nil, readError(err, gzipped)
		}
		defer h.gzipReaders.Put(zr)
		src = zr
	} else if r.ContentLength > 0 {
		// The size is known: reserve it at once, plus the byte that sees EOF.
		if !res.grow(r.ContentLength + 1) {
			h.putBuffer(buf)
			return nil, h.busy()
		}
		buf.Grow(int(r.ContentLength) + bytes.MinRead)
	}

	decoded := &maxReader{r: src, left: limit + 1, err: &tooLargeError{limit: limit, decompressed: gzipped}}
	_, err := buf.ReadFrom(&reservingReader{r: decoded, res: res, max: limit + 1})
	wireBytes := int64(buf.Len())
	if wire != nil {
		wireBytes = limit + 1 - wire.left
	}
	h.metrics.read(wireBytes, int64(buf.Len()))
	if err != nil {
		h.putBuffer(buf)
		if errors.Is(err, errInFlightExhausted) {
			return nil, h.busy()
		}
		return nil, readError(err, gzipped)
	}
	return buf, nil
}

// busy is the answer when the in-flight byte budget is exhausted.
func (h *Handler) busy() *requestError {
	return &requestError{status: http.StatusTooManyRequests, reason: "in_flight",
		message: errInFlightExhausted.Error() + "; retry later", retryAfter: h.cfg.RetryAfter}
}

// readError maps a failure to read or decompress the body to its answer.
func readError(err error, gzipped bool) *requestError {
	var tooLarge *tooLargeError
	var maxBytes *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return &requestError{status: http.StatusRequestEntityTooLarge, reason: "too_large", message: tooLarge.Error()}
	case errors.As(err, &maxBytes):
		return &requestError{status: http.StatusRequestEntityTooLarge, reason: "too_large",
			message: fmt.Sprintf("request body exceeds the limit of %d bytes", maxBytes.Limit)}
	case gzipped:
		return &requestError{status: http.StatusBadRequest, reason: "decompress",
			message: fmt.Sprintf("decompress gzip body: %v", err)}
	default:
		return &requestError{status: http.StatusBadRequest, reason: "read",
			message: fmt.Sprintf("read request body: %v", err)}
	}
}

// maxReader passes through at most left bytes of r; reading the last of them
// returns err, so that with left = limit+1 a body of exactly limit bytes
// reads cleanly and one byte more fails without reading further.
type maxReader struct {
	r    io.Reader
	left int64
	err  error
}

func (m *maxReader) Read(p []byte) (int, error) {
	if m.left <= 0 {
		return 0, m.err
	}
	if int64(len(p)) > m.left {
		p = p[:m.left]
	}
	n, err := m.r.Read(p)
	m.left -= int64(n)
	if m.left <= 0 {
		return n, m.err
	}
	return n, err
}

// minReservation is the first reservation of a body whose size is unknown.
const minReservation = 64 << 10

// reservingReader reads from r only as many bytes as res holds, growing the
// reservation (doubling it, up to max) as the body grows. When the budget is
// exhausted it fails with errInFlightExhausted, unless the body turns out to
// be complete already.
type reservingReader struct {
	r    io.Reader
	res  *reservation
	read int64
	max  int64
}

func (rr *reservingReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if rr.read >= rr.res.held {
		more := min(max(rr.res.held, minReservation), rr.max-rr.res.held)
		if more <= 0 || !rr.res.grow(more) {
			// Probe one byte: a body that ends right here needs no more room.
			var probe [1]byte
			n, err := rr.r.Read(probe[:])
			if n == 0 && err != nil {
				return 0, err
			}
			return 0, errInFlightExhausted
		}
	}
	if room := rr.res.held - rr.read; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := rr.r.Read(p)
	rr.read += int64(n)
	return n, err
}

// reservation is the part of the in-flight byte budget one request holds.
type reservation struct {
	sem     *semaphore.Weighted
	metrics *Metrics
	held    int64
}

// grow reserves n more bytes if the budget allows it, without waiting.
func (r *reservation) grow(n int64) bool {
	if !r.sem.TryAcquire(n) {
		return false
	}
	r.held += n
	r.metrics.inFlight(n)
	return true
}

// release gives back everything held.
func (r *reservation) release() {
	if r.held > 0 {
		r.sem.Release(r.held)
		r.metrics.inFlight(-r.held)
		r.held = 0
	}
}
