package schema

import (
	"context"
	"time"
)

// TableSavedQueries holds the search queries a project saved by name (the
// UI's saved queries, POST /api/v1/search/saved). A query is never
// updated in place: saving a name again, or deleting it, writes the name
// again with a higher version (Deleted set for a deletion), and
// ReplacingMergeTree keeps the latest (readers still take the latest
// version per name, because merges are eventual). Written here, read by
// package query.
const TableSavedQueries = "saved_queries"

// SavedQuery is one saved search query of a project.
type SavedQuery struct {
	Project string    `ch:"project"`
	Name    string    `ch:"name"`
	Query   string    `ch:"query"`
	SavedAt time.Time `ch:"saved_at"`
	Deleted uint8     `ch:"deleted"` // 1: the name was deleted at SavedAt
	Version uint64    `ch:"version"` // unix nanoseconds of the save
}

var savedQueryColumns = []column[SavedQuery]{
	strCol("project", func(r *SavedQuery) string { return r.Project }),
	strCol("name", func(r *SavedQuery) string { return r.Name }),
	strCol("query", func(r *SavedQuery) string { return r.Query }),
	timeCol("saved_at", func(r *SavedQuery) time.Time { return r.SavedAt }),
	u8Col("deleted", func(r *SavedQuery) uint8 { return r.Deleted }),
	u64Col("version", func(r *SavedQuery) uint64 { return r.Version }),
}

// savedQueriesTable is the saved queries table: a ReplacingMergeTree by
// project and name, sharded by project.
func savedQueriesTable(s *Store) tableDef {
	return tableDef{Name: TableSavedQueries, Columns: columnDDL(savedQueryColumns, s.caps),
		Engine: engineSpec{"ReplacingMergeTree", "version"}, OrderBy: "(project, name)", ShardBy: "cityHash64(project)"}
}

// InsertSavedQueries writes saved-query rows (a save or a deletion each).
func (s *Store) InsertSavedQueries(ctx context.Context, rows []SavedQuery) error {
	return insertColumns(ctx, s.conn, s.Table(TableSavedQueries), savedQueryColumns, rows, nil, 0, partitioner[SavedQuery]{})
}
