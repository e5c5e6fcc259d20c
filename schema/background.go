package schema

import (
	"context"

	"github.com/ClickHouse/clickhouse-go/v2"
)

// backgroundSettings are the settings of the statements tally's background
// jobs make (the settler, the cost rollup, the search keys index, the
// metrics exporter, alert evaluation): one thread each, reading blocks of
// 1,024 rows (the granule of the tables read run by run) instead of 65,536.
// Their reads are not waited on by a user, while their memory is held
// beside ingest's: on the embedded store, where the engine's memory is
// tally's, the exporter's reads of a backlog of unsettled runs (a restart
// under load) held 100–200 MiB each with the defaults; and a read of runs'
// spans with FINAL holds a block of every part it merges, so the review's
// read of 250 runs' spans with their attribute arrays held 52–64 MiB in
// blocks of 8,192 rows, 41–44 in blocks of 1,024, with no ingest rate or
// settler time lost that the bench could see.
func backgroundSettings() clickhouse.Settings {
	return clickhouse.Settings{"max_threads": 1, "max_block_size": 1024}
}

// Background returns ctx for a background job: its statements run with
// backgroundSettings (a statement that sets its own settings through
// clickhouse.Context replaces them for itself).
func Background(ctx context.Context) context.Context {
	return clickhouse.Context(ctx, clickhouse.WithSettings(backgroundSettings()))
}
