package api

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
)

// RunReadLimits bound what reading one run (GET /runs/{id}, its fixture)
// may cost, so that a few requests for a huge run cannot take the server's
// memory: each answer holds at most MaxRunSpans spans, and at most
// MaxConcurrent such reads run at once; a request that finds no slot within
// Wait is answered 503 with Retry-After.
type RunReadLimits struct {
	MaxRunSpans   int
	MaxConcurrent int
	Wait          time.Duration
}

// DefaultRunReadLimits: 10,000 spans (about 10 MB of JSON) per answer, two
// at once, a 10 s wait.
func DefaultRunReadLimits() RunReadLimits {
	return RunReadLimits{MaxRunSpans: 10000, MaxConcurrent: 2, Wait: 10 * time.Second}
}

// setRunReadLimits sets the run read limits; zero fields take the defaults.
func (h *Handler) setRunReadLimits(l RunReadLimits) {
	d := DefaultRunReadLimits()
	if l.MaxRunSpans <= 0 {
		l.MaxRunSpans = d.MaxRunSpans
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
