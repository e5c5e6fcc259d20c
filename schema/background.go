package schema

import (
	"context"

	"github.com/ClickHouse/clickhouse-go/v2"
)

// backgroundSettings are the settings of the statements tally's background
// jobs make (the settler, the cost rollup, the search keys index, the
// metrics exporter, alert evaluation): one thread each, reading blocks of
// 8,192 rows instead of 65,536. Their reads are not waited on by a user,
// while their memory is held beside ingest's: on the embedded store, where
// the engine's memory is tally's, the exporter's reads of a backlog of
// unsettled runs (a restart under load) held 100–200 MiB each with the
// defaults.
func backgroundSettings() clickhouse.Settings {
	return clickhouse.Settings{"max_threads": 1, "max_block_size": 8192}
}

// Background returns ctx for a background job: its statements run with
// backgroundSettings (a statement that sets its own settings through
// clickhouse.Context replaces them for itself).
func Background(ctx context.Context) context.Context {
	return clickhouse.Context(ctx, clickhouse.WithSettings(backgroundSettings()))
}
