package schema

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// TableSpanFacts holds, for every span, the columns that time-range reads
// need (ids, times, who and what, tool call identity, usage and cost: what
// cost reports, rollups, tool statistics, cache health and the alert
// evaluator read), sorted by hour first:
// (project, toStartOfHour(start), trace_id, span_id).
//
// The spans table is sorted by run, so that loading a run is a primary-key
// range; but a day partition then holds every hour's spans interleaved, and
// any read of "the spans of this hour" (the open hour of a cost report, a
// rollup recomputation, the edges of a window) reads the whole day. Here an
// hour is a key range: such reads touch about an hour of rows instead of a
// day (8× faster for a report's open hour with 10M spans stored).
//
// A materialized view fills it from every INSERT into spans, in the same
// INSERT, so a row is never in one and missing from the other once the
// INSERT has returned. It is a ReplacingMergeTree on the same identity and
// version as spans, so duplicates collapse the same way (read it with
// FINAL). The price is storage: 55 bytes per span after merges with the
// column codecs (75–102 with LZ4), 5–7 less since its end is computed
// (derivedFactsEnd).
const TableSpanFacts = "span_facts"

// viewSpanFacts is the materialized view that copies spans into span_facts.
const viewSpanFacts = "span_facts_mv"

// spanFactNames are span_facts' columns, all of them spans columns.
var spanFactNames = append(slices.Clip(spanFactNamesV5), "usage_record", "cost_confidence")

// spanFactNamesV5 are the columns span_facts had when migration 5 created
// it: that migration's view selects only these, because the spans table of
// a store upgraded from before migration 8 lacks the later ones until
// migration 8 adds them (and recreates the view with all).
var spanFactNamesV5 = []string{
	"project", "trace_id", "span_id", "parent_span_id", "start", "start_ns", "end_ns", "duration_ns",
	"name", "status", "service", "span_type", "provider", "model", "agent_name", "conversation_id",
	"user_id", "task_name", "tool_name", "tool_call_id", "step_id", "attempt", "args_hash", "ttfc_ms",
	"input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens", "reasoning_tokens",
	"usage_mode", "cost_total", "cost_input", "cost_cache_read", "cost_cache_write", "cost_output",
	"cost_source", "version",
}

// derivedFactsEnd is span_facts.end_ns since migration 20: not stored but
// computed from the start and duration it is the sum of (Normalize makes
// every span's duration its end less its start, so the two are the same
// figure). It was a copy of spans.end_ns, 5.2 bytes a span with the
// codecs, 7 on 18.16. The table is still created with the column stored
// (the views of migrations 5 and 8, which every store runs first, select
// it, and 18.16 refuses a view whose target lacks a column it selects);
// migration 20 turns it into this alias.
const derivedFactsEnd = "start_ns + duration_ns"

// factsEnd is the column of span_facts derivedFactsEnd computes.
const factsEnd = "end_ns"

// spanFactViewNames are the columns the view feeding span_facts selects
// since migration 20: spanFactNames but the derived end.
func spanFactViewNames() []string {
	return slices.DeleteFunc(slices.Clone(spanFactNames), func(n string) bool { return n == factsEnd })
}

// deriveFactsEnd is migration 20: it replaces the stored span_facts.end_ns
// by the alias derivedFactsEnd. The view feeding span_facts selects the
// column, and a view into a table whose column it selects is an alias
// fails on 18.16, so: the view is dropped, the column dropped and added
// again as the alias (a codec'd column cannot be modified into an alias on
// 26.x, nor can 18.16 modify a column's kind), and the view created again
// without it, with the spans written since a little before copied again
// as recreateSpanFactsView does. Between the drop and the add a read of
// the column fails (for as long as two ALTERs take). It is safe to run
// again: the column is replaced only while it is stored, and the view is
// always created again.
func deriveFactsEnd(ctx context.Context, s *Store) error {
	if err := s.conn.Exec(ctx, s.dropSpanFactsView()); err != nil {
		return fmt.Errorf("drop the view feeding span_facts: %w", err)
	}
	// Another tally migrating at once may take a step first: each step is
	// taken only while the column is as it was before it, and a step that
	// fails stands if the column is now as the step would leave it.
	table := s.LocalTable(TableSpanFacts) + s.onCluster()
	kind, err := s.factsEndKind(ctx)
	if err != nil {
		return err
	}
	if kind == factsEndStored {
		if err := s.conn.Exec(ctx, "ALTER TABLE "+table+" DROP COLUMN "+factsEnd); err != nil {
			if kind, kerr := s.factsEndKind(ctx); kerr != nil || kind == factsEndStored {
				return fmt.Errorf("drop the stored span_facts.end_ns: %w", err)
			}
		}
	}
	if kind != factsEndAlias {
		if err := s.conn.Exec(ctx, "ALTER TABLE "+table+" ADD COLUMN "+factsEnd+" UInt64 ALIAS "+derivedFactsEnd); err != nil {
			if kind, kerr := s.factsEndKind(ctx); kerr != nil || kind != factsEndAlias {
				return fmt.Errorf("add span_facts.end_ns as %s: %w", derivedFactsEnd, err)
			}
		}
	}
	for _, stmt := range s.refillSpanFactsView(spanFactViewNames()) {
		if err := s.conn.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("create the view feeding span_facts: %w", err)
		}
	}
	return nil
}

// What span_facts.end_ns is on this node (factsEndKind).
const (
	factsEndStored = "stored"
	factsEndAlias  = "alias"
	factsEndNone   = "none"
)

// factsEndKind reads what span_facts.end_ns is on this node: stored, the
// alias, or not there.
func (s *Store) factsEndKind(ctx context.Context) (string, error) {
	local := s.columnTables(TableSpanFacts)[0] // the table holding the rows
	var kind string
	var n uint64
	if err := s.conn.QueryRow(ctx, "SELECT any(default_kind), count() FROM system.columns WHERE database = ? AND table = ? AND name = ?",
		s.db, local, factsEnd).Scan(&kind, &n); err != nil {
		return "", fmt.Errorf("read span_facts.end_ns: %w", err)
	}
	switch {
	case n == 0:
		return factsEndNone, nil
	case kind == "ALIAS":
		return factsEndAlias, nil
	}
	return factsEndStored, nil
}

func spanFactsTable(s *Store) tableDef {
	return tableDef{Name: TableSpanFacts, Columns: columnDDL(factColumns(), s.caps),
		Engine: engineSpec{"ReplacingMergeTree", "version"}, PartitionBy: "toYYYYMMDD(start)",
		OrderBy: "(project, toStartOfHour(start), trace_id, span_id)", ShardBy: "cityHash64(trace_id)"}
}

// spanFactsStatements create the view that fills span_facts (in cluster
// mode on each node, from its local spans into its local span_facts, so a
// row lands on its run's shard) and copy the spans stored before it. Both
// are idempotent: a second copy of a row collapses with the first.
// factColumns are span_facts' columns, in the spans table's order, each
// compressed with factsCodec after its transform.
func factColumns() []column[Span] {
	var cols []column[Span]
	for _, c := range spanColumns {
		if slices.Contains(spanFactNames, c.name) {
			c.codec = factsCodec
			cols = append(cols, c)
		}
	}
	return cols
}

// storedFactColumns are factColumns but the derived end (an alias since
// migration 20, which takes no codec): the columns columnCodecs gives
// codecs.
func storedFactColumns() []column[Span] {
	return slices.DeleteFunc(factColumns(), func(c column[Span]) bool { return c.name == factsEnd })
}

func spanFactsStatements(s *Store) []string {
	return s.spanFactsView(spanFactNamesV5, "")
}

// spanFactsView is the statements that create the view feeding span_facts
// with names and copy into span_facts the spans rows that match where (all
// when empty).
func (s *Store) spanFactsView(names []string, where string) []string {
	list := strings.Join(names, ", ")
	copyRows := "INSERT INTO " + s.Table(TableSpanFacts) + " (" + list + ") SELECT " + list + " FROM " + s.Table(TableSpans)
	if where != "" {
		copyRows += " WHERE " + where
	}
	return []string{
		"CREATE MATERIALIZED VIEW IF NOT EXISTS " + s.Table(viewSpanFacts) + s.onCluster() + " TO " + s.LocalTable(TableSpanFacts) +
			" AS SELECT " + list + " FROM " + s.LocalTable(TableSpans),
		copyRows,
	}
}

// recreateSpanFactsView replaces the view feeding span_facts with one that
// selects every current facts column. A view cannot be altered, so it is
// dropped and created again; spans written between the two would reach no
// facts row, so the spans written since a little before (version, the
// write time in nanoseconds, from ten minutes before the migration: the
// clocks of several tally processes may differ) are copied again, which the
// facts table's ReplacingMergeTree collapses with the rows it has.
// It is migration 8's, which selects spanFactNames (the end included: see
// derivedFactsEnd).
func recreateSpanFactsView(s *Store) []string {
	return append([]string{s.dropSpanFactsView()}, s.refillSpanFactsView(spanFactNames)...)
}

// dropSpanFactsView is the statement that drops the view feeding
// span_facts (recreateSpanFactsView, deriveFactsEnd).
func (s *Store) dropSpanFactsView() string {
	return "DROP TABLE IF EXISTS " + s.Table(viewSpanFacts) + s.onCluster()
}

// refillSpanFactsView is the statements that create the view feeding
// span_facts with names again after dropSpanFactsView, and copy the spans
// written since ten minutes before (see recreateSpanFactsView).
func (s *Store) refillSpanFactsView(names []string) []string {
	since := uint64(time.Now().Add(-10 * time.Minute).UnixNano())
	return s.spanFactsView(names, "version >= "+strconv.FormatUint(since, 10))
}
