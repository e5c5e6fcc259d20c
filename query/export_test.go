package query

// WithLiveShardRuns makes a reader review live runs in parts of n runs
// (liveShardRuns is 5,000), so that a test of a few runs covers the
// review in parts.
func WithLiveShardRuns(n int) ReaderOption { return func(r *core) { r.liveShardRuns = n } }
