package api

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/support/params"
)

// maxFocus is the most span ids one run request may focus on.
const maxFocus = 16

// getRun answers GET /runs/{trace_id}: the run's summary and tree. A run of
// more than max_nodes spans (default and most: --max-run-spans) is answered
// in part — the paths to the focused spans, the costliest span and the
// first error, then the tree breadth-first — with "partial" set and each
// node saying what it leaves out (hidden_children, hidden_spans); the rest
// is fetched with GET …/spans/{span_id}/children.
func (h *Handler) getRun(c *gin.Context) {
	id, ok := h.traceParam(c)
	if !ok {
		return
	}
	maxNodes, err := h.maxNodes(c.Query("max_nodes"))
	if err != nil {
		fail(c, http.StatusBadRequest, "%v", err)
		return
	}
	var focus []string
	for _, v := range c.QueryArray("focus") {
		for _, f := range strings.Split(v, ",") {
			sid, err := params.SpanID(f)
			if err != nil {
				fail(c, http.StatusBadRequest, "focus: %v", err)
				return
			}
			focus = append(focus, sid)
		}
	}
	if len(focus) > maxFocus {
		fail(c, http.StatusBadRequest, "focus: %d span ids, at most %d", len(focus), maxFocus)
		return
	}
	release, ok := h.acquireRunRead(c)
	if !ok {
		return
	}
	defer release()
	if h.opts.Trees == nil {
		fail(c, http.StatusNotImplemented, "this server reads no run trees")
		return
	}
	run, err := h.opts.Trees.RunTree(c.Request.Context(), Project(c), id,
		query.TreeOptions{MaxNodes: maxNodes, MaxSpans: h.reads.MaxTreeSpans, Focus: focus})
	if errors.Is(err, query.ErrNotFound) {
		fail(c, http.StatusNotFound, "run %s not found", id)
		return
	}
	if err != nil {
		fail(c, http.StatusInternalServerError, "load run: %v", err)
		return
	}
	writeAppended(c, run.AppendJSON)
}

// writeAppended answers 200 with the JSON encode writes: a run tree's own
// encoder, which writes in one pass what encoding/json (through c.JSON)
// took half of a big run's answer to write.
func writeAppended(c *gin.Context, encode func([]byte) ([]byte, error)) {
	b, err := encode(nil)
	if err != nil {
		fail(c, http.StatusInternalServerError, "encode: %v", err)
		return
	}
	c.Data(http.StatusOK, "application/json; charset=utf-8", b)
}

// getChildren answers GET /runs/{trace_id}/spans/{span_id}/children: the
// span's children from offset (default 0), at most limit of them (default
// max_nodes), each with as much of its subtree as max_nodes holds (default
// and most: --max-run-spans); next_offset is the offset of the next page,
// null after the last.
func (h *Handler) getChildren(c *gin.Context) {
	id, spanID, ok := h.spanParams(c)
	if !ok {
		return
	}
	maxNodes, err := h.maxNodes(c.Query("max_nodes"))
	if err != nil {
		fail(c, http.StatusBadRequest, "%v", err)
		return
	}
	offset, err := nonNegative("offset", c.Query("offset"), 0)
	if err != nil {
		fail(c, http.StatusBadRequest, "%v", err)
		return
	}
	limit, err := nonNegative("limit", c.Query("limit"), maxNodes)
	if err != nil || limit == 0 || limit > maxNodes {
		fail(c, http.StatusBadRequest, "limit %q: want an integer from 1 to max_nodes (%d)", c.Query("limit"), maxNodes)
		return
	}
	children := h.opts.Trees
	if children == nil {
		fail(c, http.StatusNotImplemented, "this server's reader does not answer span children")
		return
	}
	release, ok := h.acquireRunRead(c)
	if !ok {
		return
	}
	defer release()
	part, err := children.Children(c.Request.Context(), Project(c), id, spanID,
		query.ChildrenOptions{Offset: offset, Limit: limit, MaxNodes: maxNodes, MaxSpans: h.reads.MaxTreeSpans})
	if errors.Is(err, query.ErrNotFound) {
		fail(c, http.StatusNotFound, "span %s of run %s not found", spanID, id)
		return
	}
	if err != nil {
		fail(c, http.StatusInternalServerError, "load span children: %v", err)
		return
	}
	writeAppended(c, part.AppendJSON)
}

// spanParams reads a {trace_id}/spans/{span_id} route's ids, or answers
// 400 (404 for an unknown trace id prefix) and returns false.
func (h *Handler) spanParams(c *gin.Context) (traceID, spanID string, ok bool) {
	if traceID, ok = h.traceParam(c); !ok {
		return "", "", false
	}
	spanID, err := params.SpanID(c.Param("span_id"))
	if err != nil {
		fail(c, http.StatusBadRequest, "%v", err)
		return "", "", false
	}
	return traceID, spanID, true
}

// maxNodes parses a max_nodes parameter: 1 to --max-run-spans, that when absent.
func (h *Handler) maxNodes(v string) (int, error) {
	if v == "" {
		return h.reads.MaxRunSpans, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > h.reads.MaxRunSpans {
		return 0, fmt.Errorf("max_nodes %q: want an integer from 1 to %d (--max-run-spans)", v, h.reads.MaxRunSpans)
	}
	return n, nil
}

// nonNegative parses an optional integer parameter ≥ 0, def when absent.
func nonNegative(name, v string, def int) (int, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s %q: want an integer ≥ 0", name, v)
	}
	return n, nil
}
