package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/replay"
	"github.com/tallyhq/tally/replay/recording"
)

// Fixtures is what the fixture endpoint needs; query.FixtureReader implements it.
type Fixtures interface {
	FixtureWithin(ctx context.Context, project, traceID string, maxSpans int, opts ...recording.BuildOption) (*replay.Fixture, error)
}

// getFixture answers GET /runs/:trace_id/fixture with the run's replay
// fixture (replay/FORMAT.md) as a download: the deterministic bytes of
// replay.Fixture.MarshalDeterministic, so the same run always downloads as
// the same file. ?inferences=true adds the run's model calls.
func (h *Handler) getFixture(c *gin.Context) {
	id, ok := h.traceParam(c)
	if !ok {
		return
	}
	fixtures := h.opts.Fixtures
	if fixtures == nil {
		fail(c, http.StatusNotImplemented, "this server cannot export fixtures")
		return
	}
	var opts []recording.BuildOption
	if s := c.Query("inferences"); s != "" {
		with, err := strconv.ParseBool(s)
		if err != nil {
			fail(c, http.StatusBadRequest, "inferences %q: want true or false", s)
			return
		}
		if with {
			opts = append(opts, recording.WithInferences())
		}
	}
	release, ok := h.acquireRunRead(c)
	if !ok {
		return
	}
	defer release()
	f, err := fixtures.FixtureWithin(c.Request.Context(), Project(c), id, h.reads.MaxRunSpans, opts...)
	if errors.Is(err, query.ErrNotFound) {
		fail(c, http.StatusNotFound, "run %s not found", id)
		return
	}
	if errors.Is(err, query.ErrRunTooLarge) {
		fail(c, http.StatusRequestEntityTooLarge, "run %s has more than %d spans, the most a fixture export reads (--max-run-spans)", id, h.reads.MaxRunSpans)
		return
	}
	if err != nil {
		fail(c, http.StatusInternalServerError, "export fixture: %v", err)
		return
	}
	body, err := f.MarshalDeterministic()
	if err != nil {
		fail(c, http.StatusInternalServerError, "export fixture: %v", err)
		return
	}
	c.Header("Content-Disposition", `attachment; filename="`+id+`.fixture.json"`)
	c.Data(http.StatusOK, "application/json", body)
}
