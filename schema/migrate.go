package schema

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
)

// migration is one versioned, idempotent schema change. Every statement must
// be safe to run again (IF NOT EXISTS, ADD COLUMN IF NOT EXISTS …): ClickHouse
// has no transactions or locks, so two tally processes starting at once may
// both apply the same migration, and idempotence is what makes that safe.
//
// Tables are created from tableDefs (Store.createTable), never from
// hand-written CREATE statements, so that cluster mode creates their local
// Replicated and Distributed tables too; changes to existing tables use
// migration.columns, which alter the local and Distributed tables alike.
// stmts run after the tables and columns.
type migration struct {
	version int
	name    string
	tables  func(s *Store) []tableDef
	// columns are added to existing tables (where they are missing: 18.16
	// has no ADD COLUMN IF NOT EXISTS), before stmts.
	columns func(s *Store) []addedColumn
	stmts   func(s *Store) []string
	// background says stmts start rewrites of the stored parts (a
	// column's type changed) that the server finishes after they return.
	background bool
	// run, when set, runs after stmts: a change whose statements depend on
	// what the store holds (and which checks it to be safe to run again).
	run func(ctx context.Context, s *Store) error
}

// addedColumn is a column a migration adds to a table that exists, placed
// after the column it follows in a table created new, so that both have
// the same column order.
type addedColumn struct {
	table, name, after string
	// typ is the column's type, what a Distributed table takes; def adds
	// its codec, what the table holding the rows takes.
	typ, def string
}

// addColumns lists the columns of cols named in names, each to be added to
// table after the column before it in cols.
func addColumns[R any](s *Store, table string, cols []column[R], names ...string) []addedColumn {
	var out []addedColumn
	for i, c := range cols {
		if i > 0 && slices.Contains(names, c.name) {
			out = append(out, addedColumn{table: table, name: c.name, typ: c.typeFor(s.caps), def: c.definition(s.caps), after: cols[i-1].name})
		}
	}
	return out
}

// migrations is the ordered list of schema versions. Append only.
var migrations = []migration{
	{version: 1, name: "spans and content tables", tables: func(s *Store) []tableDef {
		return []tableDef{spansTable(s), contentTable(s)}
	}},
	{version: 2, name: "cost rollup tables", tables: func(s *Store) []tableDef {
		return []tableDef{costRollupTable(s), rollupHoursTable(s)}
	}},
	{version: 3, name: "api keys table", tables: func(s *Store) []tableDef {
		return []tableDef{apiKeysTable(s)}
	}},
	{version: 4, name: "leases table", tables: func(s *Store) []tableDef {
		return []tableDef{leasesTable(s)}
	}},
	{version: 5, name: "span facts by hour", tables: func(s *Store) []tableDef {
		return []tableDef{spanFactsTable(s)}
	}, stmts: spanFactsStatements},
	{version: 6, name: "outcomes table", tables: func(s *Store) []tableDef {
		return []tableDef{outcomesTable(s)}
	}},
	{version: 7, name: "run table", tables: func(s *Store) []tableDef {
		return []tableDef{runsTable(s), runMarksTable(s)}
	}},
	{version: 8, name: "usage records and cost confidence", columns: func(s *Store) []addedColumn {
		spend := confidenceSpendNames()
		return slices.Concat(
			addColumns(s, TableSpans, spanColumns, "usage_record", "cost_confidence"),
			addColumns(s, TableSpanFacts, factColumns(), "usage_record", "cost_confidence"),
			addColumns(s, TableRuns, runColumns, spend...),
			addColumns(s, TableCostRollup, costRollupColumns, spend...))
	}, stmts: recreateSpanFactsView},
	{version: 9, name: "saved search queries", tables: func(s *Store) []tableDef {
		return []tableDef{savedQueriesTable(s)}
	}},
	{version: 10, name: "span column keys", columns: func(s *Store) []addedColumn {
		return addColumns(s, TableSpans, spanColumns, "column_keys")
	}},
	{version: 11, name: "content text index", stmts: contentTextIndex},
	{version: 12, name: "search keys index", tables: func(s *Store) []tableDef {
		return []tableDef{searchKeysTable(s)}
	}},
	{version: 13, name: "adaptive write buffers", stmts: modifyTableSettings},
	{version: 14, name: "settled run trees", columns: func(s *Store) []addedColumn {
		return addColumns(s, TableRuns, runColumns, "tree")
	}},
	{version: 15, name: ColumnCodecsMigration, stmts: columnCodecs},
	{version: 16, name: "vertical merges", stmts: modifyTableSettings},
	{version: 17, name: "run rollup", tables: func(s *Store) []tableDef {
		return []tableDef{runRollupTable(s), runRollupHoursTable(s)}
	}},
	{version: 18, name: RowCodecsMigration, stmts: func(s *Store) []string {
		return slices.Concat(columnCodecs(s), modifyTableSettings(s))
	}},
	{version: 19, name: DictionaryNamesMigration, stmts: dictionaryNames, background: true},
	{version: 20, name: "derived span end in span_facts", run: deriveFactsEnd},
}

// DictionaryNamesMigration is the name of the migration that stores span
// names and attribute and resource keys as LowCardinality (dictionary) on
// servers that have it. The parts written before are rewritten by the
// server in the background (a mutation of those columns alone, which
// tally migrate waits for: Store.WaitMutations); reads meanwhile convert
// them as they go.
const DictionaryNamesMigration = "dictionary names"

// dictionaryNames gives the columns stored as dictionaries (see
// dictionary) their type on servers with LowCardinality: nothing on 18.16.
func dictionaryNames(s *Store) []string {
	if !s.caps.LowCardinality {
		return nil
	}
	return slices.Concat(
		modifyTypes(s, TableSpans, spanColumns, "name", "attr_keys", "resource_keys"),
		modifyTypes(s, TableSpanFacts, factColumns(), "name"))
}

// modifyTypes is the ALTER that gives the named columns of table their
// type (and codec) on s's server, on the table holding the rows and, in
// cluster mode, on the Distributed table over it (its type only). Giving a
// column the type it has already changes nothing, so it is safe to run
// twice.
func modifyTypes[R any](s *Store, table string, cols []column[R], names ...string) []string {
	var out []string
	for _, t := range s.columnTables(table) {
		distributed := s.cluster != "" && t == table
		var clauses []string
		for _, c := range cols {
			if !slices.Contains(names, c.name) {
				continue
			}
			def := c.definition(s.caps)
			if distributed {
				def = c.typeFor(s.caps)
			}
			clauses = append(clauses, "MODIFY COLUMN "+c.name+" "+def)
		}
		if len(clauses) > 0 {
			out = append(out, "ALTER TABLE `"+s.db+"`.`"+t+"`"+s.onCluster()+" "+strings.Join(clauses, ", "))
		}
	}
	return out
}

// RowCodecsMigration is the name of the migration that gives the short
// columns of spans ZSTD (rowsCodec) and the content's text index
// compressed posting lists, on servers that have them; like
// ColumnCodecsMigration, the parts written before keep their compression
// until merged or recompressed.
const RowCodecsMigration = "row codecs"

// ColumnCodecsMigration is the name of the migration that gives the span
// tables of a store created before it their columns' codecs; parts written
// before it keep their compression until merged or recompressed
// (Recompress).
const ColumnCodecsMigration = "column codecs"

// columnCodecs gives the columns of the span tables (spans, span_facts,
// content) the codecs a new store's get (column.definition), on servers
// with codecs. A codec applies to the parts written from then on (inserts
// and merges); the change is metadata only, so it is quick on any size of
// table. The Distributed tables of cluster mode store nothing and keep
// their columns.
func columnCodecs(s *Store) []string {
	if !s.caps.Codecs {
		return nil
	}
	return slices.Concat(
		modifyCodecs(s, TableSpans, spanColumns),
		modifyCodecs(s, TableSpanFacts, storedFactColumns()),
		modifyCodecs(s, TableContent, contentColumns))
}

// modifyCodecs is the one ALTER that gives table's columns with a codec
// their definitions (type unchanged, codec added); none when no column has
// one.
func modifyCodecs[R any](s *Store, table string, cols []column[R]) []string {
	var clauses []string
	for _, c := range cols {
		if def := c.definition(s.caps); def != c.typeFor(s.caps) {
			clauses = append(clauses, "MODIFY COLUMN "+c.name+" "+def)
		}
	}
	if len(clauses) == 0 {
		return nil
	}
	return []string{"ALTER TABLE " + s.LocalTable(table) + s.onCluster() + " " + strings.Join(clauses, ", ")}
}

// tallyTables are the tables of tally's schema (the views' targets among
// them) as of the migrations that change every table: those created
// later are created with the settings those migrations give.
func tallyTables(s *Store) []tableDef {
	return []tableDef{spansTable(s), contentTable(s), costRollupTable(s), rollupHoursTable(s), apiKeysTable(s), leasesTable(s),
		spanFactsTable(s), outcomesTable(s), runsTable(s), runMarksTable(s), savedQueriesTable(s), searchKeysTable(s), migrationsTable()}
}

// modifyTableSettings gives the tables of a store created before them the
// MergeTree settings a new store's get (Store.tableSettings). A setting
// applies to the parts written from then on: inserts and merges.
func modifyTableSettings(s *Store) []string {
	settings := s.tableSettings()
	if len(settings) == 0 {
		return nil
	}
	var out []string
	for _, t := range tallyTables(s) {
		out = append(out, "ALTER TABLE "+s.LocalTable(t.Name)+s.onCluster()+" MODIFY SETTING "+strings.Join(settings, ", "))
	}
	return out
}

// ContentTextIndex is the content table's full-text index, on servers
// with Capabilities.TextIndex: the tokens of each value, lowered, split at
// every ASCII character that is not a letter or digit (other code points,
// Cyrillic, Greek and CJK included, are part of tokens). A content search
// (package query) narrows with LIKE '%word%' on lowerUTF8(value), which
// the server answers from the index's token dictionary.
const ContentTextIndex = "value_tokens"

// contentTextIndex adds ContentTextIndex where the server has text
// indexes. Parts written before are not indexed until merged (a search
// reads them whole, as without the index); ALTER TABLE … MATERIALIZE
// INDEX indexes them at once.
func contentTextIndex(s *Store) []string {
	if !s.caps.TextIndex {
		return nil
	}
	return []string{"ALTER TABLE " + s.LocalTable(TableContent) + s.onCluster() + " ADD INDEX IF NOT EXISTS " + ContentTextIndex +
		" lowerUTF8(value) TYPE text(tokenizer = 'splitByNonAlpha')"}
}

// statements are the migration's statements for this store, in order.
func (m migration) statements(s *Store) []string {
	var out []string
	if m.tables != nil {
		out = s.createTables(m.tables(s)...)
	}
	if m.stmts != nil {
		out = append(out, m.stmts(s)...)
	}
	return out
}

// LatestVersion is the schema version this binary expects.
func LatestVersion() int { return migrations[len(migrations)-1].version }

// spansTable is the spans table.
//
// Sort key (project, trace_id, span_id): loading one run is a primary-key
// range lookup that reads only that run's granules in each partition, and it
// is the span's identity, which ReplacingMergeTree uses to collapse duplicate
// deliveries (the row with the highest version wins).
//
// Partition by day of the span's start: time-range aggregates (costs, tool
// latency, alerts) prune whole partitions, and a duplicate of a span always
// lands in the same partition as the original (same start), so the engine's
// per-partition deduplication sees both. Reads still deduplicate (FINAL or
// LIMIT 1 BY) because merges are eventual.
//
// In cluster mode, sharded by trace_id: a run on one shard, and a duplicate
// on the shard of its original (see cluster.go).
func spansTable(s *Store) tableDef {
	return tableDef{Name: TableSpans, Columns: columnDDL(spanColumns, s.caps),
		Engine: engineSpec{"ReplacingMergeTree", "version"}, PartitionBy: "toYYYYMMDD(start)",
		OrderBy: "(project, trace_id, span_id)", ShardBy: "cityHash64(trace_id)", IndexGranularity: runGranularity}
}

// runGranularity is the index granularity of the tables read run by run
// (spans, content): a run's rows are a few hundred in one key range, and
// the finer marks read 1,024 rows around them per part instead of 8,192.
// Tables created before it keep 8,192, which is only slower.
const runGranularity = 1024

// contentTable is the content table: keyed and sharded like spans, so a
// run's content is also one range lookup per partition, on the run's shard.
func contentTable(s *Store) tableDef {
	return tableDef{Name: TableContent, Columns: columnDDL(contentColumns, s.caps),
		Engine: engineSpec{"ReplacingMergeTree", "version"}, PartitionBy: "toYYYYMMDD(start)",
		OrderBy: "(project, trace_id, span_id, kind, source_key)", ShardBy: "cityHash64(trace_id)", IndexGranularity: runGranularity}
}

// migrationsTable records applied migrations. Sharded by version in cluster
// mode: every row of one version on one shard.
func migrationsTable() tableDef {
	return tableDef{Name: TableMigrations, Columns: "version UInt32, name String, applied_at DateTime",
		Engine: engineSpec{"ReplacingMergeTree", "applied_at"}, OrderBy: "version", ShardBy: "version"}
}

// Migrate creates the database and applies every migration not yet recorded,
// in order. Running it twice, or from two processes at once, is safe.
func (s *Store) Migrate(ctx context.Context) error {
	if err := s.Detect(ctx); err != nil {
		return err
	}
	// In cluster mode the database and the migrations table are created ON
	// CLUSTER only when this node lacks them: distributed DDL waits for every
	// node, so issuing it at every start would stall a restart while a node
	// is down (see cluster.go).
	exists, err := s.exists(ctx, "SELECT count() FROM system.databases WHERE name = ?", s.db)
	if err != nil {
		return err
	}
	if !exists || s.cluster == "" {
		if err := s.conn.Exec(ctx, "CREATE DATABASE IF NOT EXISTS `"+s.db+"`"+s.onCluster()); err != nil {
			return fmt.Errorf("create database %s: %w", s.db, err)
		}
	}
	exists, err = s.exists(ctx, "SELECT count() FROM system.tables WHERE database = ? AND name = ?", s.db, TableMigrations)
	if err != nil {
		return err
	}
	if !exists || s.cluster == "" {
		for _, stmt := range s.createTable(migrationsTable()) {
			if err := s.conn.Exec(ctx, stmt); err != nil {
				return fmt.Errorf("create migrations table: %w", err)
			}
		}
	}
	applied, err := s.appliedVersions(ctx)
	if err != nil {
		return err
	}
	for _, m := range migrations {
		if applied[m.version] {
			continue
		}
		if err := s.apply(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

// apply runs one migration: adds the columns its tables lack, runs its
// statements, and records it.
func (s *Store) apply(ctx context.Context, m migration) error {
	added, err := s.missingColumns(ctx, m)
	if err != nil {
		return err
	}
	for _, c := range added {
		if err := s.conn.Exec(ctx, c.stmt); err != nil {
			// Another process migrating at once may have added it first.
			if has, herr := s.hasColumn(ctx, c.table, c.name); herr != nil || !has {
				return fmt.Errorf("migration %d (%s): %w", m.version, m.name, err)
			}
		}
	}
	// A migration that changes a column's type leaves the rewrite of the
	// stored parts to the server's background (see Mutations): the ALTER
	// waits for it otherwise (alter_sync, on the embedded engine too),
	// which would hold tally serve's start for as long as the rewrite
	// takes. 18.16 has neither setting (nor such a migration).
	stmtCtx := ctx
	if m.background && s.caps.Major >= 20 {
		stmtCtx = clickhouse.Context(ctx, clickhouse.WithSettings(clickhouse.Settings{"mutations_sync": 0, "alter_sync": 0}))
	}
	for _, stmt := range m.statements(s) {
		if err := s.conn.Exec(stmtCtx, stmt); err != nil {
			return fmt.Errorf("migration %d (%s): %w", m.version, m.name, err)
		}
	}
	if m.run != nil {
		if err := m.run(ctx, s); err != nil {
			return fmt.Errorf("migration %d (%s): %w", m.version, m.name, err)
		}
	}
	return s.recordMigration(ctx, m)
}

// alteration is one ALTER statement adding column name to table.
type alteration struct {
	table, name, stmt string
}

// missingColumns are the ALTER statements that add the migration's columns
// a table lacks.
func (s *Store) missingColumns(ctx context.Context, m migration) ([]alteration, error) {
	if m.columns == nil {
		return nil, nil
	}
	var out []alteration
	for _, c := range m.columns(s) {
		for _, table := range s.columnTables(c.table) {
			has, err := s.hasColumn(ctx, table, c.name)
			if err != nil {
				return nil, err
			}
			if !has {
				def := c.def
				if s.cluster != "" && table == c.table { // the Distributed table
					def = c.typ
				}
				out = append(out, alteration{table: table, name: c.name,
					stmt: "ALTER TABLE `" + s.db + "`.`" + table + "`" + s.onCluster() + " ADD COLUMN " + c.name + " " + def + " AFTER " + c.after})
			}
		}
	}
	return out, nil
}

// hasColumn reports whether table (of s's database) has the column.
func (s *Store) hasColumn(ctx context.Context, table, column string) (bool, error) {
	return s.exists(ctx, "SELECT count() FROM system.columns WHERE database = ? AND table = ? AND name = ?", s.db, table, column)
}

// exists runs a count query and reports whether it counted anything.
func (s *Store) exists(ctx context.Context, query string, args ...any) (bool, error) {
	var n uint64
	if err := s.conn.QueryRow(ctx, query, args...).Scan(&n); err != nil {
		return false, fmt.Errorf("check schema: %w", err)
	}
	return n > 0, nil
}

// recordMigration inserts the migration's row through a batch: on 18.16 an
// INSERT … VALUES sent through Exec never completes over the native protocol.
func (s *Store) recordMigration(ctx context.Context, m migration) error {
	batch, err := s.conn.PrepareBatch(ctx, "INSERT INTO "+s.Table(TableMigrations)+" (version, name, applied_at)")
	if err != nil {
		return fmt.Errorf("record migration %d: %w", m.version, err)
	}
	if err := batch.Append(uint32(m.version), m.name, time.Now().UTC()); err != nil {
		return fmt.Errorf("record migration %d: %w", m.version, err)
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("record migration %d: %w", m.version, err)
	}
	return nil
}

// SchemaVersion is the highest migration recorded as applied (0 for none).
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	applied, err := s.appliedVersions(ctx)
	if err != nil {
		return 0, err
	}
	v := 0
	for k := range applied {
		v = max(v, k)
	}
	return v, nil
}

// Migrated returns nil when every migration is applied, else an error
// saying the schema is behind (the readiness check of a server).
func (s *Store) Migrated(ctx context.Context) error {
	v, err := s.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	if v < LatestVersion() {
		return fmt.Errorf("schema version %d, want %d: run tally migrate", v, LatestVersion())
	}
	return nil
}

func (s *Store) appliedVersions(ctx context.Context) (map[int]bool, error) {
	rows, err := s.conn.Query(ctx, "SELECT DISTINCT version FROM "+s.Table(TableMigrations))
	if err != nil {
		return nil, fmt.Errorf("read applied migrations: %w", err)
	}
	defer rows.Close()
	applied := map[int]bool{}
	for rows.Next() {
		var v uint32
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("scan migration version: %w", err)
		}
		applied[int(v)] = true
	}
	return applied, rows.Err()
}
