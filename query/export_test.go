package query

import (
	"context"
	"fmt"
	"time"

	"github.com/tallyhq/tally/schema"
)

// WithLiveShardRuns makes a reader review live runs in parts of n runs
// (liveShardRuns is 2,000), so that a test of a few runs covers the
// review in parts.
func WithLiveShardRuns(n int) ReaderOption { return func(r *core) { r.liveShardRuns = n } }

// WithLiveSummarySpans makes a reader summarize the runs in flight in Go
// only while they have at most n span rows (maxLiveSummarySpans is
// 100,000); -1 never, so that a test compares the two ways.
func WithLiveSummarySpans(n int) ReaderOption { return func(r *core) { r.liveSummarySpans = n } }

// WithClassifyPartCalls makes a reader classify a window's tool calls in
// parts of n calls (classifyPartCalls is 100,000), so that a test of a few
// runs covers the classification in parts.
func WithClassifyPartCalls(n int) ReaderOption { return func(r *core) { r.classifyPartCalls = n } }

// ClassifyParts is how many parts r classifies w's tool calls in.
func ClassifyParts(ctx context.Context, r *Reader, w Window) (int, error) {
	parts, err := r.core.classifyParts(ctx, w)
	return len(parts), err
}

// ClassifyRanges are the trace id ranges [lo, hi) r classifies w's tool
// calls in, nil when it classifies them at once or in shards by hash.
func ClassifyRanges(ctx context.Context, r *Reader, w Window) ([][2]string, error) {
	parts, err := r.core.classifyParts(ctx, w)
	if err != nil || len(parts) < 2 || parts[0].Of > 1 {
		return nil, err
	}
	out := make([][2]string, len(parts))
	for i, p := range parts {
		out[i] = [2]string{p.Lo, p.Hi}
	}
	return out, nil
}

// WithEdgeHourPartSpans makes a reader load the cost reports' edge hour in
// parts of about n spans (its bound otherwise), so that a test of a small
// hour covers the load in parts.
func WithEdgeHourPartSpans(n int) ReaderOption {
	return func(r *core) {
		if r.edges != nil {
			r.edges.partSpans = n
		}
	}
}

// EdgeHour says what r's edge hour cache holds: the entries of the hour
// it holds that was asked for last, and whether it holds one (not when the
// hour had too many), and the parts its latest load of an hour took.
func EdgeHour(r *Reader) (entries int, held bool, parts int) {
	c := r.core.edges
	if c == nil {
		return 0, false, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.held) == 0 || c.held[0].tooMany {
		return 0, false, c.parts
	}
	return c.held[0].entries(), true, c.parts
}

// EdgeHourLoads is how many hours and minutes of spans r's edge hour cache
// has loaded.
func EdgeHourLoads(r *Reader) int {
	c := r.core.edges
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.loads
}

// WithOpenHourClock makes a reader's open hour cache take now as the time
// (which hours it answers for, which runs are quiet).
func WithOpenHourClock(now func() time.Time) ReaderOption {
	return func(r *core) {
		if r.opens != nil {
			r.opens.now = now
		}
	}
}

// WithOpenHourAbsorbRows makes a reader's open hour cache absorb the
// quiet runs outside its base once they have n rows (a sixteenth of its
// bound otherwise).
func WithOpenHourAbsorbRows(n int) ReaderOption {
	return func(r *core) {
		if r.opens != nil {
			r.opens.absorbAt = n
		}
	}
}

// OpenHourStats is what an open hour cache has done and holds.
type OpenHourStats struct {
	Builds, Absorbs, Loads, Reads int // hours built, quiet runs absorbed (times), minutes of base spans loaded, reports answered
	BaseRuns, Entries             int // of the hour asked for last
	TooMany                       bool
}

// OpenHour says what r's open hour cache has done and holds.
func OpenHour(r *Reader) OpenHourStats {
	c := r.core.opens
	if c == nil {
		return OpenHourStats{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := OpenHourStats{Builds: c.builds, Absorbs: c.absorbs, Loads: c.loads, Reads: c.reads}
	if len(c.held) > 0 {
		s.BaseRuns, s.Entries, s.TooMany = len(c.held[0].base), c.held[0].sums.entries(), c.held[0].sums.tooMany
	}
	return s
}

// WithTwoStepRollup makes a reader's cost reports of every dimension read
// the rollup in two steps (the keys' costs, then the listed keys'
// measures), as reports by conversation and user do.
func WithTwoStepRollup() ReaderOption { return func(r *core) { r.topEvery = true } }

// WindowRollup says how a window report of f's runs (grouped by agent or
// by task) reads them: from the run rollup or not, and then how many
// hours it read from the rollup and how many runs one by one.
func WindowRollup(ctx context.Context, r *Reader, f RunFilter, byAgent bool) (used bool, rolledHours, streamedRuns int, err error) {
	by := groupTask
	if byAgent {
		by = groupAgent
	}
	w, err := r.core.windowFromRollup(ctx, f, by, facts{approvals: true, noRetries: true})
	if err != nil || w == nil {
		return false, 0, 0, err
	}
	return true, len(w.rolled), len(w.streamed), nil
}

// LiveInGo reports whether r summarizes project's runs in flight (those of
// a window from since) in Go, under its bound of span rows.
func LiveInGo(ctx context.Context, r *Reader, project string, since time.Time) (bool, error) {
	lv, err := r.core.liveRuns(ctx, project, since)
	if err != nil {
		return false, err
	}
	_, ok, err := r.core.liveSummaries(ctx, project, lv.ids)
	return ok, err
}

// WithLiveLiteralRuns makes a reader pass at most n runs in flight to a
// conversation read as rows in its statement (maxLiveLiteralRuns is 500).
func WithLiveLiteralRuns(n int) ReaderOption { return func(r *core) { r.liveLiteralRuns = n } }

// ConversationLiveRows reports whether r passes project's runs in flight
// of a conversation read from since as rows in its statements, and how
// many.
func ConversationLiveRows(ctx context.Context, r *Reader, project string, since time.Time) (bool, int, error) {
	lv, err := r.core.liveRuns(ctx, project, since)
	if err != nil {
		return false, 0, err
	}
	sel, err := selectRuns(r.store, RunFilter{Project: project, Since: since})
	if err != nil {
		return false, 0, err
	}
	kept, inGo, err := r.core.conversationLiveRuns(ctx, sel, lv)
	if err != nil || !inGo {
		return false, 0, err
	}
	rows := r.core.literalRows(kept)
	if rows == nil {
		return false, 0, nil
	}
	if len(rows.args) == 0 {
		return true, 0, nil
	}
	return true, len(rows.args[0].([]string)), nil
}

// FloatArrayLiteral is floatArrayLiteral, for the test that the store
// reads its literals back bit for bit.
func FloatArrayLiteral(vs []float64) string { return floatArrayLiteral(vs) }

// KeyLookupChunk is keyLookupChunk.
const KeyLookupChunk = keyLookupChunk

// WithKeyLookupChunk makes a reader look up the run table's rows by key in
// parts of n keys (keyLookupChunk is 2,000), so that a test of a few runs
// covers the lookups in parts.
func WithKeyLookupChunk(n int) ReaderOption { return func(r *core) { r.keyChunk = n } }

// KeyLookup is a built statement and its args.
type KeyLookup struct {
	SQL  string
	Args []any
}

// KeyLookups builds each lookup of the run table by key on store, naming n
// keys of the longest kind (each its own start second, a 32-digit id):
// the statements and their args, by builder.
func KeyLookups(store *schema.Store, n int) map[string]KeyLookup {
	starts, ids := make([]uint32, n), make([]string, n)
	base := uint32(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).Unix())
	for i := range n {
		starts[i], ids[i] = base+uint32(i), fmt.Sprintf("%032x", 0xfeedface00000000+uint64(i))
	}
	out := map[string]KeyLookup{}
	q, args := settledRunConfigsSQL(store, "p", starts, ids)
	out["configurations"] = KeyLookup{q, args}
	q, args = settledCasesSQL(store, "p", starts, ids)
	out["dataset cases"] = KeyLookup{q, args}
	q, args = settledRowsSQL(store, "p", starts, ids)
	out["run list rows"] = KeyLookup{q, args}
	q, args = currentVersionsSQL(store, "p", starts, ids)
	out["conversations' current versions"] = KeyLookup{q, args}
	return out
}
