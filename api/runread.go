package api

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
)

// RunReadLimits bound what reading one run (GET /runs/{id}, its span
// children, its fixture) may cost, so that a few requests for a huge run
// cannot take the server's memory: each answer holds at most MaxRunSpans
// span nodes (a bigger run is answered in part; a fixture is refused), the
// tree is built from at most MaxTreeSpans spans (their narrow columns: a
// bigger run is built from its earliest), and at most MaxConcurrent such
// reads run at once; a request that finds no slot within Wait is answered
// 503 with Retry-After.
type RunReadLimits struct {
	MaxRunSpans   int
	MaxTreeSpans  int
	MaxConcurrent int
	Wait          time.Duration
}

// DefaultRunReadLimits: 10,000 span nodes (about 10 MB of JSON) per answer,
// trees of up to 100,000 spans (about 1 KB of memory each while a read
// runs), two reads at once, a 10 s wait.
func DefaultRunReadLimits() RunReadLimits {
	return RunReadLimits{MaxRunSpans: 10000, MaxTreeSpans: 100000, MaxConcurrent: 2, Wait: 10 * time.Second}
}

// setRunReadLimits sets the run read limits; zero fields take the defaults.
func (h *Handler) setRunReadLimits(l RunReadLimits) {
	d := DefaultRunReadLimits()
	if l.MaxRunSpans <= 0 {
		l.MaxRunSpans = d.MaxRunSpans
	}
	if l.MaxTreeSpans <= 0 {
		l.MaxTreeSpans = d.MaxTreeSpans
	}
	if l.MaxTreeSpans < l.MaxRunSpans {
		l.MaxTreeSpans = l.MaxRunSpans
	}
	if l.MaxConcurrent <= 0 {
		l.MaxConcurrent = d.MaxConcurrent
	}
	if l.Wait <= 0 {
		l.Wait = d.Wait
	}
	h.reads = l
	h.heavy = make(chan struct{}, l.MaxConcurrent)
}

// acquireRunRead takes a run-read slot, or answers 503 and returns false.
func (h *Handler) acquireRunRead(c *gin.Context) (release func(), ok bool) {
	t := time.NewTimer(h.reads.Wait)
	defer t.Stop()
	select {
	case h.heavy <- struct{}{}:
		return func() { <-h.heavy }, true
	case <-t.C:
	case <-c.Request.Context().Done():
	}
	c.Header("Retry-After", "1")
	fail(c, http.StatusServiceUnavailable, "too many run reads under way (%d at once): try again", h.reads.MaxConcurrent)
	return nil, false
}
