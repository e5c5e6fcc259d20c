package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/tallyhq/tally/query"
)

// Conversations is what GET /conversations needs; query.RunReader implements it.
type Conversations interface {
	Conversations(ctx context.Context, f query.ConversationFilter) (query.ConversationPage, error)
	Conversation(ctx context.Context, project, id string) (*query.ConversationDetail, error)
	ConversationTranscript(ctx context.Context, project, id string) (*query.Transcript, error)
}

// registerConversations mounts GET /conversations (a page of conversations,
// most recently active first: since, until, limit, cursor) and
// GET /conversations/{id} (its runs oldest first, with totals) and
// GET /conversations/{id}/transcript (one chat turn per run).
func (h *Handler) registerConversations(r gin.IRoutes, spans gin.HandlerFunc) {
	convs := h.opts.Conversations
	r.GET("/conversations", spans, func(c *gin.Context) {
		if convs == nil {
			fail(c, http.StatusNotImplemented, "conversations are not configured")
			return
		}
		f := query.ConversationFilter{Project: Project(c), Cursor: c.Query("cursor")}
		var ok bool
		if f.Since, f.Until, f.Limit, ok = pageQuery(c, h.now()); !ok {
			return
		}
		page, err := convs.Conversations(c.Request.Context(), f)
		if err != nil {
			failList(c, "list conversations", err)
			return
		}
		c.JSON(http.StatusOK, page)
	})
	r.GET("/conversations/:id", spans, func(c *gin.Context) {
		if convs == nil {
			fail(c, http.StatusNotImplemented, "conversations are not configured")
			return
		}
		id := c.Param("id")
		d, err := convs.Conversation(c.Request.Context(), Project(c), id)
		if errors.Is(err, query.ErrNotFound) {
			fail(c, http.StatusNotFound, "conversation %q not found", id)
			return
		}
		if err != nil {
			fail(c, http.StatusInternalServerError, "load conversation: %v", err)
			return
		}
		c.JSON(http.StatusOK, d)
	})
	r.GET("/conversations/:id/transcript", spans, func(c *gin.Context) {
		if convs == nil {
			fail(c, http.StatusNotImplemented, "conversations are not configured")
			return
		}
		id := c.Param("id")
		tr, err := convs.ConversationTranscript(c.Request.Context(), Project(c), id)
		if errors.Is(err, query.ErrNotFound) {
			fail(c, http.StatusNotFound, "conversation %q not found", id)
			return
		}
		if err != nil {
			fail(c, http.StatusInternalServerError, "load conversation transcript: %v", err)
			return
		}
		c.JSON(http.StatusOK, tr)
	})
}
