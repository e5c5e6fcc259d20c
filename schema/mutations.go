package schema

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Mutation is a rewrite of a table's stored parts that the server runs in
// the background after a migration changed a column's type (ALTER … MODIFY
// COLUMN: DictionaryNamesMigration). Reads go on meanwhile, converting the
// parts not yet rewritten as they read them; the server keeps the work in
// its data directory, so a restart resumes it.
type Mutation struct {
	Table     string // tally's name of the table (in cluster mode, on some node)
	Command   string // what the server rewrites, as it states it
	PartsToDo int64  // parts left to rewrite
	// FailReason is why the last attempt at a part failed ("" when none
	// has): the server tries again, but a reason that does not go away
	// (memory, disk) needs an operator.
	FailReason string
}

// Mutations lists the rewrites of tally's tables the server has not
// finished, oldest first; in cluster mode every node's.
func (s *Store) Mutations(ctx context.Context) ([]Mutation, error) {
	from := "system.mutations"
	if s.cluster != "" {
		from = "cluster('" + s.cluster + "', system.mutations)"
	}
	reason := "''"
	if s.caps.Major >= 20 { // 18.16 does not record why a part failed
		reason = "latest_fail_reason"
	}
	rows, err := s.conn.Query(ctx, "SELECT table, command, toInt64(parts_to_do), "+reason+" FROM "+from+
		" WHERE database = ? AND NOT is_done ORDER BY create_time, table", s.db)
	if err != nil {
		return nil, fmt.Errorf("list the server's rewrites of tally's tables: %w", err)
	}
	defer rows.Close()
	var out []Mutation
	for rows.Next() {
		var m Mutation
		if err := rows.Scan(&m.Table, &m.Command, &m.PartsToDo, &m.FailReason); err != nil {
			return nil, fmt.Errorf("list the server's rewrites of tally's tables: %w", err)
		}
		m.Table = strings.TrimSuffix(m.Table, "_local")
		out = append(out, m)
	}
	return out, rows.Err()
}

// WaitMutations waits until the server has finished rewriting tally's
// tables (Mutations), checking every interval and calling progress with
// what is left at each check that finds work (nil: no report). It fails
// when ctx ends, or when a rewrite has failed a part and makes no progress
// for stall: the server goes on trying, and the error says why it fails.
func (s *Store) WaitMutations(ctx context.Context, interval, stall time.Duration, progress func([]Mutation)) error {
	var lastLeft int64 = -1
	lastMoved := time.Now()
	for {
		ms, err := s.Mutations(ctx)
		if err != nil {
			return err
		}
		if len(ms) == 0 {
			return nil
		}
		if progress != nil {
			progress(ms)
		}
		var left int64
		failed := ""
		for _, m := range ms {
			left += m.PartsToDo
			if m.FailReason != "" && failed == "" {
				failed = m.Table + ": " + m.FailReason
			}
		}
		if left != lastLeft {
			lastLeft, lastMoved = left, time.Now()
		}
		if failed != "" && time.Since(lastMoved) >= stall {
			return fmt.Errorf("the server's rewrite of %s has made no progress for %s; it keeps trying in the background (system.mutations)", failed, stall)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for the server's rewrites (%d parts left; they go on in the background): %w", left, ctx.Err())
		case <-time.After(interval):
		}
	}
}
