package schema

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// codecTables are the tables whose columns get codecs (columnCodecs), the
// ones Recompress rewrites.
var codecTables = []string{TableSpans, TableSpanFacts, TableContent}

// CodecsSince is when the last of the codecs migrations
// (ColumnCodecsMigration, RowCodecsMigration) was applied to this store:
// parts written before then keep the compression they were written with
// until a merge or Recompress rewrites them. ok is false on a server
// without column codecs, and before the migrations. The time is tally's
// clock and the parts' times the server's: a skew between them leaves a
// few parts to their next merge or rewrites a few twice, harmless either
// way.
func (s *Store) CodecsSince(ctx context.Context) (since time.Time, ok bool, err error) {
	if !s.caps.Codecs {
		return time.Time{}, false, nil
	}
	var at time.Time
	var n uint64
	q := "SELECT max(applied_at), count() FROM " + s.Table(TableMigrations) + " WHERE name IN (?, ?)"
	if err := s.conn.QueryRow(ctx, q, ColumnCodecsMigration, RowCodecsMigration).Scan(&at, &n); err != nil {
		return time.Time{}, false, fmt.Errorf("read when column codecs were applied: %w", err)
	}
	return at, n > 0, nil
}

// Rewrite is one partition Recompress rewrote, with its place in the work.
type Rewrite struct {
	Table     string
	Partition string // partition id (a day, 20261205, for the span tables)
	Rows      uint64 // rows in the partition's active parts before the rewrite
	Done      int    // partitions rewritten so far, this one included
	Total     int    // partitions to rewrite in this call
}

// Recompress rewrites, one partition at a time, every partition of the
// span tables (the ones with codecs) that holds an active part last
// written before `before` (CodecsSince, for a store upgraded to codecs),
// so that the data stored before the upgrade takes the codecs too
// (OPTIMIZE … PARTITION … FINAL: the merge writes the partition anew,
// which also collapses its duplicate rows as merges always do). A store's
// readers and writers go on meanwhile; the memory is one merge's, bounded
// as every merge. It is resumable: a partition rewritten has parts newer
// than before, so a second call skips it. progress, when not nil, is
// called after each partition. In cluster mode it lists every node's parts
// and rewrites ON CLUSTER. On a server without codecs it rewrites with the
// server's compression.
//
// The answer is the number of partitions rewritten.
func (s *Store) Recompress(ctx context.Context, before time.Time, progress func(Rewrite)) (int, error) {
	type partition struct {
		table, id string
		rows      uint64
	}
	local := make([]string, len(codecTables))
	for i, t := range codecTables {
		if s.cluster != "" {
			t += "_local"
		}
		local[i] = "'" + t + "'" // tally's own names: nothing to escape
	}
	// In cluster mode every node's parts, as retention lists them: a
	// partition may exist on some shards only.
	parts := "system.parts"
	if s.cluster != "" {
		parts = "cluster('" + s.cluster + "', system.parts)"
	}
	rows, err := s.conn.Query(ctx, "SELECT table, partition_id, sum(rows) FROM "+parts+" WHERE database = ? AND active AND table IN ("+strings.Join(local, ", ")+") "+
		"GROUP BY table, partition_id HAVING min(modification_time) < toDateTime(?) ORDER BY table, partition_id",
		s.db, before.Unix())
	if err != nil {
		return 0, fmt.Errorf("list partitions to recompress: %w", err)
	}
	var todo []partition
	for rows.Next() {
		var p partition
		if err := rows.Scan(&p.table, &p.id, &p.rows); err != nil {
			rows.Close()
			return 0, fmt.Errorf("list partitions to recompress: %w", err)
		}
		todo = append(todo, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("list partitions to recompress: %w", err)
	}
	for i, p := range todo {
		// The span tables are partitioned by day (toYYYYMMDD), so an id
		// is the partition's value, as retention drops it.
		if _, err := strconv.ParseUint(p.id, 10, 32); err != nil {
			return i, fmt.Errorf("recompress %s partition %s: not a partition id", p.table, p.id)
		}
		stmt := "OPTIMIZE TABLE `" + s.db + "`.`" + p.table + "`" + s.onCluster() + " PARTITION " + p.id + " FINAL"
		if err := s.conn.Exec(ctx, stmt); err != nil {
			return i, fmt.Errorf("recompress %s partition %s (%d of %d; run again to continue): %w", p.table, p.id, i+1, len(todo), err)
		}
		if progress != nil {
			progress(Rewrite{Table: strings.TrimSuffix(p.table, "_local"), Partition: p.id, Rows: p.rows, Done: i + 1, Total: len(todo)})
		}
	}
	return len(todo), nil
}
