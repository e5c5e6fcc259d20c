package query

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/tallyhq/tally/attribution"
	"github.com/tallyhq/tally/schema"
)

// The reads package rollup's jobs need: the attributed spans they aggregate,
// the fingerprints that tell a stale hour, the keys an hour had, and whole
// span rows to reprice. The jobs write through schema.Store.

// AttributedSpans loads and attributes the spans of every run that has a
// span starting in [from, to), reading runs within window of the range, and
// returns the spans starting in [from, to) (see loadSpans). project "" loads
// every project. shard limits the load to one part of the runs, so that a
// range of many spans can be aggregated part by part in bounded memory.
func (r RollupSource) AttributedSpans(ctx context.Context, project string, from, to time.Time, window time.Duration, shard Shard) ([]attribution.Attributed, error) {
	return r.loadSpansShard(ctx, project, from, to, window, shard)
}

// Shard is one part of the runs by trace id, every run whole in exactly
// one part: the trace ids in [Lo, Hi) ("" leaves a side open), or, when
// Of > 1, part Index (from 0) of Of parts by a hash of the trace id. The
// zero Shard is every run.
//
// A range is what a read of span_facts can prune by: the table is sorted
// by project, hour and trace id, so within each hour the granules outside
// the range are skipped, where a part by hash reads every granule of the
// hours (prefixShards cuts the ranges).
type Shard struct {
	Index, Of int
	Lo, Hi    string
}

// cond is the condition on trace_id that keeps the runs of the part, with
// its arguments, or "" for every run.
func (s Shard) cond() (string, []any) {
	if s.Of > 1 {
		return fmt.Sprintf("cityHash64(trace_id) %% %d = %d", s.Of, s.Index), nil
	}
	var conds []string
	var args []any
	if s.Lo != "" {
		conds, args = append(conds, "trace_id >= ?"), append(args, s.Lo)
	}
	if s.Hi != "" {
		conds, args = append(conds, "trace_id < ?"), append(args, s.Hi)
	}
	return strings.Join(conds, " AND "), args
}

// tracePrefixLen is how many leading characters of a trace id
// prefixShards counts rows by: 4,096 prefixes of hexadecimal ids, so a
// part can be cut to within a 4,096th of the rows.
const tracePrefixLen = 3

// prefixShards cuts the runs into ranges of trace ids of at most per rows
// each, between the ids' prefixes, by q (with args): the rows counted by
// the first tracePrefixLen characters of their trace id, in the ids'
// order (prefixCountsSQL). When one prefix alone holds more than per rows
// (ids that begin with a timestamp, as X-Ray's do), it returns shards by
// hash instead, as many as total rows need.
func (r *core) prefixShards(ctx context.Context, q string, args []any, per, total uint64) ([]Shard, error) {
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("count rows by trace id: %w", err)
	}
	type prefix struct {
		p string
		n uint64
	}
	prefixes, err := scanAll(rows, func(x *prefix) []any { return []any{&x.p, &x.n} })
	if err != nil {
		return nil, fmt.Errorf("count rows by trace id: %w", err)
	}
	shards := []Shard{{}}
	var in uint64 // rows in the last shard
	for _, x := range prefixes {
		if x.n > per {
			of := int(max(1, (total+per-1)/per))
			byHash := make([]Shard, of)
			for i := range byHash {
				byHash[i] = Shard{Index: i, Of: of}
			}
			return byHash, nil
		}
		if in+x.n > per {
			shards[len(shards)-1].Hi = x.p
			shards = append(shards, Shard{Lo: x.p})
			in = 0
		}
		in += x.n
	}
	return shards, nil
}

// prefixCountsSQL is the count prefixShards reads: span_facts' rows that
// where (with args) keeps, by the first tracePrefixLen characters of
// their trace id, in the order of the ids (a prefix sorts before every
// longer id it begins).
func prefixCountsSQL(t tables, where string, args []any) (string, []any) {
	return "SELECT substring(trace_id, 1, " + fmt.Sprint(tracePrefixLen) + ") AS p, count() FROM " + t.Table(schema.TableSpanFacts) +
		" WHERE " + where + " GROUP BY p ORDER BY p", args
}

// SpanShards is the parts the runs with a span starting in [from, to) are
// loaded in (AttributedSpans) so that each holds at most per of the
// range's span rows: ranges of trace ids (see Shard), n shards by hash
// when the ids do not spread. total is the range's rows, known to the
// caller from its fingerprints.
func (r RollupSource) SpanShards(ctx context.Context, from, to time.Time, per, total int) ([]Shard, error) {
	q, args := prefixCountsSQL(r.store, "start >= ? AND start < ?", []any{from, to})
	return r.prefixShards(ctx, q, args, uint64(max(per, 1)), uint64(total))
}

// HourFingerprint identifies the state of an hour of span_facts: its row
// count and the sum of its rows' versions. A new span, a duplicate, a
// reprice or a merge collapsing duplicates changes it.
type HourFingerprint struct {
	Rows, VersionSum uint64
}

// SpanFingerprints reads the fingerprint of each hour in [from, to) of
// span_facts, the table AttributedSpans reads. Duplicates are not collapsed:
// they are part of what the fingerprint records.
func (r RollupSource) SpanFingerprints(ctx context.Context, from, to time.Time) (map[time.Time]HourFingerprint, error) {
	return r.SpanFingerprintsUpTo(ctx, from, to, 0)
}

// SpanFingerprintsUpTo is SpanFingerprints of the spans whose version is
// at most upTo (0: all of them): what a computation that reads only those
// (package keyindex) saw of each hour.
func (r RollupSource) SpanFingerprintsUpTo(ctx context.Context, from, to time.Time, upTo uint64) (map[time.Time]HourFingerprint, error) {
	q, args := spanFingerprintsSQL(r.store, from, to, upTo)
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("fingerprint spans: %w", err)
	}
	type row struct {
		hour uint64
		fp   HourFingerprint
	}
	hours, err := scanAll(rows, func(x *row) []any { return []any{&x.hour, &x.fp.Rows, &x.fp.VersionSum} })
	if err != nil {
		return nil, fmt.Errorf("fingerprint spans: %w", err)
	}
	out := make(map[time.Time]HourFingerprint, len(hours))
	for _, x := range hours {
		out[time.Unix(int64(x.hour), 0).UTC()] = x.fp
	}
	return out, nil
}

// spanFingerprintsSQL builds SpanFingerprintsUpTo's statement.
func spanFingerprintsSQL(t tables, from, to time.Time, upTo uint64) (string, []any) {
	where, args := " WHERE start >= ? AND start < ?", []any{from, to}
	if upTo > 0 {
		where, args = where+" AND version <= ?", append(args, upTo)
	}
	return "SELECT toUInt64(intDiv(toUInt32(start), 3600) * 3600) AS h, count(), sum(version) FROM " +
		t.Table(schema.TableSpanFacts) + where + " GROUP BY h", args
}

// RollupFingerprints reads, for each hour in [from, to) the rollup has
// computed, the span fingerprint its latest computation recorded.
func (r RollupSource) RollupFingerprints(ctx context.Context, from, to time.Time) (map[time.Time]HourFingerprint, error) {
	q, args := rollupFingerprintsSQL(r.store, from, to)
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read rollup state: %w", err)
	}
	type row struct {
		hour uint32
		fp   HourFingerprint
	}
	hours, err := scanAll(rows, func(x *row) []any { return []any{&x.hour, &x.fp.Rows, &x.fp.VersionSum} })
	if err != nil {
		return nil, fmt.Errorf("read rollup state: %w", err)
	}
	out := make(map[time.Time]HourFingerprint, len(hours))
	for _, x := range hours {
		out[time.Unix(int64(x.hour), 0).UTC()] = x.fp
	}
	return out, nil
}

// rollupFingerprintsSQL builds RollupFingerprints' statement.
func rollupFingerprintsSQL(t tables, from, to time.Time) (string, []any) {
	return "SELECT toUInt32(hour) AS h, argMax(raw_rows, version), argMax(raw_version_sum, version) FROM " +
		t.Table(schema.TableCostRollupHours) + " WHERE hour >= ? AND hour < ? GROUP BY h", []any{from, to}
}

// RollupKeys lists the rollup rows of the latest computation of the hours in
// [from, to) that are not tombstones, with only their key columns (project,
// grain, hour and the dimensions) and Spans set.
func (r RollupSource) RollupKeys(ctx context.Context, from, to time.Time) ([]schema.CostRollupRow, error) {
	q, args := rollupKeysSQL(r.store, from, to)
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read cost rollup keys: %w", err)
	}
	type row struct {
		key  schema.CostRollupRow
		hour int64
	}
	keys, err := scanAll(rows, func(x *row) []any {
		k := &x.key
		return []any{&k.Project, &k.Grain, &x.hour, &k.Agent, &k.Model, &k.Provider, &k.Task,
			&k.Service, &k.Tool, &k.Conversation, &k.User, &k.Spans}
	})
	if err != nil {
		return nil, fmt.Errorf("read cost rollup keys: %w", err)
	}
	out := make([]schema.CostRollupRow, len(keys))
	for i, x := range keys {
		out[i] = x.key
		out[i].Hour = time.Unix(x.hour, 0).UTC()
	}
	return out, nil
}

// rollupKeysSQL builds RollupKeys' statement.
func rollupKeysSQL(t tables, from, to time.Time) (string, []any) {
	cols := []string{"project", "grain", "toInt64(toUInt32(hour))", "agent", "model", "provider", "task",
		"service", "tool", "conversation_id", "user_id", "spans"}
	table := t.Table(schema.TableCostRollup)
	last := to.Add(-time.Hour)
	return "SELECT " + strings.Join(cols, ", ") + " FROM " + table +
		" WHERE hour >= ? AND hour <= ? AND " + latestGeneration(table) + " AND spans > 0", []any{from, last, from, last}
}

// SpanRows reads whole span rows, deduplicated (FINAL), starting in
// [from, to); project "" reads every project.
func (r RollupSource) SpanRows(ctx context.Context, project string, from, to time.Time) ([]schema.Span, error) {
	q, args := spanRowsSQL(r.store, project, from, to)
	var spans []schema.Span
	if err := r.store.Conn().Select(ctx, &spans, q, args...); err != nil {
		return nil, fmt.Errorf("read spans %s–%s: %w", from.Format(time.RFC3339), to.Format(time.RFC3339), err)
	}
	return spans, nil
}

// spanRowsSQL builds SpanRows' statement.
func spanRowsSQL(t tables, project string, from, to time.Time) (string, []any) {
	q := "SELECT " + schema.SpanColumnNames() + " FROM " + final(t.Table(schema.TableSpans)) +
		" WHERE start >= ? AND start <= ? AND start_ns >= ? AND start_ns < ?"
	args := []any{from.Truncate(time.Second), to.Truncate(time.Second), uint64(from.UnixNano()), uint64(to.UnixNano())}
	if project != "" {
		q += " AND project = ?"
		args = append(args, project)
	}
	return q, args
}
