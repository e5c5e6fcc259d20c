package receiver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

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
// compressed nor the decompressed body is read past limit+1 bytes, every
// byte held is first reserved on res as it arrives (never from the declared
// Content-Length), and a body arriving slower than MinBodyRate is cut
// through rc.
func (h *Handler) readBody(rc *http.ResponseController, r *http.Request, gzipped bool, res *reservation) (*bytes.Buffer, *requestError) {
	limit := h.cfg.Limits.MaxBodyBytes
	buf := h.getBuffer()
	if r.Body == nil || (!gzipped && r.ContentLength == 0) {
		return buf, nil
	}
	var body io.Reader = r.Body
	if h.cfg.MinBodyRate > 0 {
		g := newRateGuard(r.Body, rc, h.cfg.MinBodyRate, h.cfg.BodyRateGrace)
		defer g.stop()
		body = g
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

// errTooSlow reports a body arriving slower than Config.MinBodyRate.
var errTooSlow = errors.New("request body arrives too slowly")

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
	case errors.Is(err, errTooSlow):
		return &requestError{status: http.StatusRequestTimeout, reason: "slow_body",
			message: "request body arrived slower than the minimum transfer rate"}
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

// readAhead is the most bytes reserved for one read of the body before
// they arrive: a request that trickles holds at most this much more than it
// has sent.
const readAhead = 32 << 10

// reservingReader reads from r only bytes reserved on res: before each read
// it reserves room for that read (at most readAhead, and never past max in
// total; less when the budget is nearly spent), and after it gives back
// what did not arrive. When the budget is exhausted it fails with errInFlightExhausted, unless the body turns out to
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
	want := min(int64(len(p)), readAhead, rr.max-rr.read)
	if want <= 0 {
		// max bytes are read: r (limited to max) reports why it ends.
		return rr.r.Read(p[:0])
	}
	for want > 0 && !rr.res.grow(want) {
		want /= 2 // a nearly spent budget still takes a small body
	}
	if want == 0 {
		// Probe one byte: a body that ends right here needs no more room.
		var probe [1]byte
		n, err := rr.r.Read(probe[:])
		if n == 0 && err != nil {
			return 0, err
		}
		return 0, errInFlightExhausted
	}
	n, err := rr.r.Read(p[:want])
	rr.read += int64(n)
	rr.res.shrink(want - int64(n))
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

// shrink gives back n of the bytes held.
func (r *reservation) shrink(n int64) {
	if n > 0 {
		r.sem.Release(n)
		r.metrics.inFlight(-n)
		r.held -= n
	}
}

// release gives back everything held.
func (r *reservation) release() { r.shrink(r.held) }

// rateGuard passes a request body through and cuts it once it arrives
// slower than rate bytes per second: after grace, n bytes are due by
// start + grace + n/rate. A timer checks when the next byte is due; a late
// body is marked slow and the read waiting for it is ended by moving the
// connection's read deadline to now (where the connection does not support
// deadlines, the next read ends it). The guard only ever shortens the
// deadline, so the server's read timeout still holds.
type rateGuard struct {
	r     io.Reader
	rc    *http.ResponseController
	start time.Time
	grace time.Duration
	rate  int64
	read  atomic.Int64
	slow  atomic.Bool

	mu    sync.Mutex // guards done and the timer; held while using rc
	done  bool
	timer *time.Timer
}

func newRateGuard(r io.Reader, rc *http.ResponseController, rate int64, grace time.Duration) *rateGuard {
	g := &rateGuard{r: r, rc: rc, start: time.Now(), grace: grace, rate: rate}
	g.mu.Lock()
	g.timer = time.AfterFunc(grace, g.check)
	g.mu.Unlock()
	return g
}

// due is when more than n bytes must have arrived.
func (g *rateGuard) due(n int64) time.Time {
	return g.start.Add(g.grace + time.Duration(n/g.rate)*time.Second +
		time.Duration(n%g.rate)*time.Second/time.Duration(g.rate))
}

// check runs when the next byte is due: it waits on if it came, and cuts
// the body if not.
func (g *rateGuard) check() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.done {
		return
	}
	if wait := time.Until(g.due(g.read.Load())); wait > 0 {
		g.timer.Reset(wait)
		return
	}
	g.slow.Store(true)
	_ = g.rc.SetReadDeadline(time.Now()) // http.ErrNotSupported: the next Read ends it
}

// Read reads from the body, failing with errTooSlow once it is late.
func (g *rateGuard) Read(p []byte) (int, error) {
	if g.slow.Load() {
		return 0, errTooSlow
	}
	n, err := g.r.Read(p)
	g.read.Add(int64(n))
	if err != nil && !errors.Is(err, io.EOF) && g.slow.Load() {
		err = errTooSlow // the deadline check set ended this read
	}
	return n, err
}

// stop ends the checks; after it returns the guard no longer touches the
// connection.
func (g *rateGuard) stop() {
	g.mu.Lock()
	g.done = true
	g.timer.Stop()
	g.mu.Unlock()
}
