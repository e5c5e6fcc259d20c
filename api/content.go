package api

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/tallyhq/tally/schema"
	"github.com/tallyhq/tally/transcript"
)

// ContentReader is what the span-content endpoint needs;
// query.ContentReader implements it.
type ContentReader interface {
	SpanContent(ctx context.Context, project, traceID, spanID string) ([]schema.Content, error)
	// MissingSpans tells a span with no content from no span (404).
	MissingSpans(ctx context.Context, project, traceID string, spanIDs []string) ([]string, error)
}

// ChatReader reads a span's conversation in one shape;
// query.ContentReader implements it. Without it the content answer has no chat.
type ChatReader interface {
	SpanChat(ctx context.Context, project, traceID, spanID string, contents []schema.Content) (transcript.Chat, error)
}

// SpanContent is the answer of GET /api/v1/runs/{trace_id}/spans/{span_id}:
// the content captured for one span (tool arguments and results, messages).
type SpanContent struct {
	TraceID string        `json:"trace_id"`
	SpanID  string        `json:"span_id"`
	Content []ContentItem `json:"content"`
	// Chat is the span's messages as chat turns (system, user, assistant,
	// tool; text, tool calls and results), read from whichever dialect the
	// instrumentation sent; absent when the span carried none.
	Chat *transcript.Chat `json:"chat,omitempty"`
}

// ContentItem is one captured value of a span.
type ContentItem struct {
	Kind      string `json:"kind"`       // schema.Content* constants, e.g. tool.arguments
	SourceKey string `json:"source_key"` // the attribute or event it came from
	Value     string `json:"value"`
	Truncated bool   `json:"truncated,omitempty"` // cut at the configured maximum size
}

func (h *Handler) getSpanContent(c *gin.Context) {
	traceID, spanID, ok := h.spanParams(c)
	if !ok {
		return
	}
	cr := h.opts.Content
	if cr == nil {
		fail(c, http.StatusNotFound, "span content is not available in this build")
		return
	}
	rows, err := cr.SpanContent(c.Request.Context(), Project(c), traceID, spanID)
	if err != nil {
		fail(c, http.StatusInternalServerError, "load span content: %v", err)
		return
	}
	if len(rows) == 0 {
		missing, err := cr.MissingSpans(c.Request.Context(), Project(c), traceID, []string{spanID})
		if err != nil {
			fail(c, http.StatusInternalServerError, "look up span: %v", err)
			return
		}
		if len(missing) > 0 {
			fail(c, http.StatusNotFound, "span %s not found in run %s", spanID, traceID)
			return
		}
	}
	out := SpanContent{TraceID: traceID, SpanID: spanID, Content: make([]ContentItem, 0, len(rows))}
	for _, r := range rows {
		out.Content = append(out.Content, ContentItem{Kind: r.Kind, SourceKey: r.SourceKey, Value: r.Value, Truncated: r.Truncated == 1})
	}
	if chr := h.opts.Chat; chr != nil {
		if rows == nil {
			rows = []schema.Content{} // loaded, and none: not to be read again
		}
		chat, err := chr.SpanChat(c.Request.Context(), Project(c), traceID, spanID, rows)
		if err != nil {
			fail(c, http.StatusInternalServerError, "read span messages: %v", err)
			return
		}
		if !chat.Empty() {
			out.Chat = &chat
		}
	}
	c.JSON(http.StatusOK, out)
}
