package query

import "context"

// WithLiveShardRuns makes a reader review live runs in parts of n runs
// (liveShardRuns is 2,000), so that a test of a few runs covers the
// review in parts.
func WithLiveShardRuns(n int) ReaderOption { return func(r *core) { r.liveShardRuns = n } }

// WithClassifyPartCalls makes a reader classify a window's tool calls in
// parts of n calls (classifyPartCalls is 100,000), so that a test of a few
// runs covers the classification in parts.
func WithClassifyPartCalls(n int) ReaderOption { return func(r *core) { r.classifyPartCalls = n } }

// ClassifyParts is how many parts r classifies w's tool calls in.
func ClassifyParts(ctx context.Context, r *Reader, w Window) (int, error) {
	return r.core.classifyParts(ctx, w)
}
