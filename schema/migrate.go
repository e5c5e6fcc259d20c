package schema

import (
	"context"
	"fmt"
	"time"
)

// migration is one versioned, idempotent schema change. Every statement must
// be safe to run again (IF NOT EXISTS, ADD COLUMN IF NOT EXISTS …): ClickHouse
// has no transactions or locks, so two tally processes starting at once may
// both apply the same migration, and idempotence is what makes that safe.
type migration struct {
	version int
	name    string
	stmts   func(s *Store) []string
}

// migrations is the ordered list of schema versions. Append only.
var migrations = []migration{
	{1, "spans and content tables", func(s *Store) []string {
		return []string{spansDDL(s), contentDDL(s)}
	}},
}

// LatestVersion is the schema version this binary expects.
func LatestVersion() int { return migrations[len(migrations)-1].version }

// spansDDL creates the spans table.
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
func spansDDL(s *Store) string {
	return "CREATE TABLE IF NOT EXISTS " + s.Table(TableSpans) + " (\n  " +
		columnDDL(spanColumns, s.caps) + "\n) ENGINE = ReplacingMergeTree(version)\n" +
		"PARTITION BY toYYYYMMDD(start)\nORDER BY (project, trace_id, span_id)"
}

// contentDDL creates the content table: keyed like spans, so a run's content
// is also one range lookup per partition.
func contentDDL(s *Store) string {
	return "CREATE TABLE IF NOT EXISTS " + s.Table(TableContent) + " (\n  " +
		columnDDL(contentColumns, s.caps) + "\n) ENGINE = ReplacingMergeTree(version)\n" +
		"PARTITION BY toYYYYMMDD(start)\nORDER BY (project, trace_id, span_id, kind, source_key)"
}

// Migrate creates the database and applies every migration not yet recorded,
// in order. Running it twice, or from two processes at once, is safe.
func (s *Store) Migrate(ctx context.Context) error {
	if err := s.conn.Exec(ctx, "CREATE DATABASE IF NOT EXISTS `"+s.db+"`"); err != nil {
		return fmt.Errorf("create database %s: %w", s.db, err)
	}
	if err := s.conn.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+s.Table(TableMigrations)+
		" (version UInt32, name String, applied_at DateTime)"+
		" ENGINE = ReplacingMergeTree(applied_at) ORDER BY version"); err != nil {
		return fmt.Errorf("create migrations table: %w", err)
	}
	applied, err := s.appliedVersions(ctx)
	if err != nil {
		return err
	}
	for _, m := range migrations {
		if applied[m.version] {
			continue
		}
		for _, stmt := range m.stmts(s) {
			if err := s.conn.Exec(ctx, stmt); err != nil {
				return fmt.Errorf("migration %d (%s): %w", m.version, m.name, err)
			}
		}
		if err := s.recordMigration(ctx, m); err != nil {
			return err
		}
	}
	return nil
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
