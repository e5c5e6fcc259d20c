package server

import (
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/tallyhq/tally/api"
	"github.com/tallyhq/tally/ingest"
	"github.com/tallyhq/tally/ingest/deadletter"
	"github.com/tallyhq/tally/ingest/rowcodec"
)

// The dead-letter endpoints let an operator see, replay and discard the
// records the store refused for good (package ingest/deadletter). They
// take the metrics scope, the operator's cross-project key, like
// /api/v1/storage: an entry may hold several projects' spans.

// DeadLetterList is GET /api/v1/deadletter.
type DeadLetterList struct {
	Dir     string             `json:"dir"`
	Entries []deadletter.Entry `json:"entries"`
}

// DeadLetterDetail is GET /api/v1/deadletter/{id}: the entry and what its
// record holds.
type DeadLetterDetail struct {
	Entry deadletter.Entry `json:"entry"`
	// Traces are the runs its spans belong to, by project.
	Traces []DeadLetterTrace `json:"traces"`
}

// DeadLetterTrace is one run's spans in a dead-lettered record.
type DeadLetterTrace struct {
	Project string    `json:"project"`
	TraceID string    `json:"trace_id"`
	Spans   int       `json:"spans"`
	First   time.Time `json:"first_start"`
	Last    time.Time `json:"last_start"`
	Names   []string  `json:"names"` // up to 5, sorted
}

// deadLetters is the sink's dead-letter directory, or an answer that there
// is none.
func (s *Server) deadLetters(c *gin.Context) (DeadLetterQueue, *deadletter.Dir, bool) {
	sink := s.opts.DeadLetters
	if sink == nil || sink.DeadLetters() == nil {
		c.JSON(http.StatusNotFound, api.Error{Error: "no dead-letter directory: the durable log is off"})
		return nil, nil, false
	}
	return sink, sink.DeadLetters(), true
}

func (s *Server) listDeadLetters(c *gin.Context) {
	_, dir, ok := s.deadLetters(c)
	if !ok {
		return
	}
	entries, err := dir.List()
	if err != nil {
		c.JSON(http.StatusInternalServerError, api.Error{Error: err.Error()})
		return
	}
	if entries == nil {
		entries = []deadletter.Entry{}
	}
	c.JSON(http.StatusOK, DeadLetterList{Dir: dir.Path(), Entries: entries})
}

// readDeadLetter reads the entry the path names from the sink's
// directory, or answers why not.
func (s *Server) readDeadLetter(c *gin.Context) (DeadLetterQueue, deadletter.Entry, []byte, bool) {
	sink, dir, ok := s.deadLetters(c)
	if !ok {
		return nil, deadletter.Entry{}, nil, false
	}
	e, rec, err := dir.Read(c.Param("id"))
	switch {
	case errors.Is(err, deadletter.ErrNotFound):
		c.JSON(http.StatusNotFound, api.Error{Error: err.Error()})
		return nil, e, nil, false
	case err != nil:
		c.JSON(http.StatusInternalServerError, api.Error{Error: err.Error()})
		return nil, e, nil, false
	}
	return sink, e, rec, true
}

func (s *Server) showDeadLetter(c *gin.Context) {
	_, e, rec, ok := s.readDeadLetter(c)
	if !ok {
		return
	}
	b, err := rowcodec.AppendDecode(ingest.Batch{}, rec)
	if err != nil {
		c.JSON(http.StatusInternalServerError, api.Error{Error: "dead-letter entry " + e.ID + ": " + err.Error()})
		return
	}
	byTrace := map[[2]string]*DeadLetterTrace{}
	var order [][2]string
	for _, sp := range b.Spans {
		k := [2]string{sp.Project, sp.TraceID}
		t := byTrace[k]
		if t == nil {
			t = &DeadLetterTrace{Project: sp.Project, TraceID: sp.TraceID, First: sp.Start, Last: sp.Start}
			byTrace[k] = t
			order = append(order, k)
		}
		t.Spans++
		if sp.Start.Before(t.First) {
			t.First = sp.Start
		}
		if sp.Start.After(t.Last) {
			t.Last = sp.Start
		}
		if len(t.Names) < 5 && !slices.Contains(t.Names, sp.Name) {
			t.Names = append(t.Names, sp.Name)
		}
	}
	out := DeadLetterDetail{Entry: e, Traces: make([]DeadLetterTrace, 0, len(order))}
	for _, k := range order {
		t := byTrace[k]
		slices.Sort(t.Names)
		out.Traces = append(out.Traces, *t)
	}
	c.JSON(http.StatusOK, out)
}

// replayDeadLetter appends the entry's record to the durable log again and
// removes the entry: the drain writes it like any other record (and
// dead-letters it anew if the store still refuses it).
func (s *Server) replayDeadLetter(c *gin.Context) {
	sink, e, rec, ok := s.readDeadLetter(c)
	if !ok {
		return
	}
	if err := sink.Requeue(c.Request.Context(), rec); err != nil {
		c.JSON(http.StatusServiceUnavailable, api.Error{Error: err.Error()})
		return
	}
	if err := sink.DeadLetters().Remove(e.ID); err != nil {
		// Requeued but still listed: a second replay would store it
		// twice, which reads collapse (span identity).
		c.JSON(http.StatusInternalServerError, api.Error{Error: "replayed, but not removed: " + err.Error()})
		return
	}
	s.log.Info("dead-letter entry replayed into the durable log", "entry", e.ID, "spans", e.Spans)
	c.JSON(http.StatusOK, gin.H{"replayed": e})
}

func (s *Server) discardDeadLetter(c *gin.Context) {
	_, dir, ok := s.deadLetters(c)
	if !ok {
		return
	}
	err := dir.Remove(c.Param("id"))
	switch {
	case errors.Is(err, deadletter.ErrNotFound):
		c.JSON(http.StatusNotFound, api.Error{Error: err.Error()})
	case err != nil:
		c.JSON(http.StatusInternalServerError, api.Error{Error: err.Error()})
	default:
		s.log.Warn("dead-letter entry discarded: its spans are gone", "entry", c.Param("id"))
		c.JSON(http.StatusOK, gin.H{"discarded": c.Param("id")})
	}
}
