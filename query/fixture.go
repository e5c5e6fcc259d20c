package query

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/tallyhq/tally/replay"
	"github.com/tallyhq/tally/replay/recording"
	"github.com/tallyhq/tally/schema"
)

// Contents loads every content row of a run (tool arguments and results,
// messages, system instructions), deduplicated, ordered by span id, kind and
// source key. A run without content, or not in the project, has none.
func (r FixtureReader) Contents(ctx context.Context, project, traceID string) ([]schema.Content, error) {
	var rows []schema.Content
	q, args := contentsSQL(r.store, project, traceID)
	if err := r.store.Conn().Select(ctx, &rows, q, args...); err != nil {
		return nil, fmt.Errorf("load content of run %s: %w", traceID, err)
	}
	return rows, nil
}

// contentsSQL builds Contents' statement.
func contentsSQL(t tables, project, traceID string) (string, []any) {
	q := "SELECT " + schema.ContentColumnNames() + " FROM " + final(t.Table(schema.TableContent)) +
		" WHERE project = ? AND trace_id = ? ORDER BY span_id, kind, source_key"
	return q, []any{project, strings.ToLower(traceID)}
}

// Fixture builds the replay fixture of one run from its stored spans and
// content: every tool call in execution order with its recorded arguments and
// result or error, and the calls whose content was not captured (see
// replay/FORMAT.md). It returns ErrNotFound when the project holds no span of
// the run. The fixture's source_version is this build's version.
func (r FixtureReader) Fixture(ctx context.Context, project, traceID string, opts ...recording.BuildOption) (*replay.Fixture, error) {
	return r.FixtureWithin(ctx, project, traceID, 0, opts...)
}

// ErrRunTooLarge is returned for a run with more spans than a read allows.
var ErrRunTooLarge = errors.New("run has more spans than this read allows")

// FixtureWithin is Fixture for a run of at most maxSpans spans (0: no
// bound); a larger run gives ErrRunTooLarge, since a fixture must hold every
// call of the run.
func (r FixtureReader) FixtureWithin(ctx context.Context, project, traceID string, maxSpans int, opts ...recording.BuildOption) (*replay.Fixture, error) {
	traceID = strings.ToLower(traceID)
	spans, more, err := r.spans(ctx, project, traceID, maxSpans)
	if err != nil {
		return nil, err
	}
	if more {
		return nil, fmt.Errorf("fixture of run %s: %w (%d)", traceID, ErrRunTooLarge, maxSpans)
	}
	if len(spans) == 0 {
		return nil, ErrNotFound
	}
	contents, err := r.Contents(ctx, project, traceID)
	if err != nil {
		return nil, err
	}
	f, err := recording.Build(replay.RunInfo{TraceID: traceID, SourceVersion: BuildVersion()}, spans, contents, opts...)
	if err != nil {
		return nil, fmt.Errorf("fixture of run %s: %w", traceID, err)
	}
	return f, nil
}

// BuildVersion is the version of the running tally as the Go toolchain
// recorded it (the module version, or a VCS pseudo-version for a build from
// a checkout), "dev" when none was recorded (go run, go test).
func BuildVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok || info.Main.Version == "" || info.Main.Version == "(devel)" {
		return "dev"
	}
	return info.Main.Version
}
