package schema

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// TableSearchKeys is the search keys index: per project and hour, the
// span and resource attribute keys the hour's spans carried, with how many
// spans carried each, and each key's most frequent values. Search
// autocomplete (package query) reads it for the hours it holds instead of
// the spans' attribute arrays; package keyindex writes it.
//
// An hour is indexed whole, in one computation whose rows share a
// version: the key rows (Total 1, Value ""), the value rows (Total 0),
// and last a mark (Project "", Scope "", Key ""), which records the span
// fingerprint the computation saw (Spans, VersionSum). Readers take, per
// hour, the rows of the latest marked computation; a computation that
// failed before its mark is never read.
const TableSearchKeys = "search_keys"

// MaxSearchKeyValues is how many of a key's most frequent values an hour
// keeps, and MaxSearchKeyValueBytes the longest value kept (longer ones
// are ids and texts nobody picks from a list).
const (
	MaxSearchKeyValues     = 50
	MaxSearchKeyValueBytes = 200
)

// SearchKeyLag is how old a span's version (the moment tally accepted it)
// must be, when a computation of the index begins, for the computation to
// read it: a computation at version V indexes the spans of versions up to
// SearchKeysUpTo(V), and readers read the newer ones from the spans. The
// lag keeps a span accepted just before a computation but written to the
// store after the computation's read (in the writer's queue meanwhile)
// out of the index, where it would be missed, and in the readers' part.
const SearchKeyLag = 10 * time.Second

// SearchKeysUpTo is the highest span version a computation of the keys
// index at version v reads.
func SearchKeysUpTo(v uint64) uint64 {
	return v - min(v, uint64(SearchKeyLag))
}

// SearchKeyHour is an indexed hour's mark: the hour, the version of its
// computation and the span fingerprint (rows, sum of versions) of the
// spans it read (those of versions up to SearchKeysUpTo(Version)).
type SearchKeyHour struct {
	Hour       time.Time
	Version    uint64
	Spans      uint64
	VersionSum uint64
}

// searchKeysTable is the index: one day a partition (the spans' retention
// drops it with theirs), keyed for a project's keys of a scope.
func searchKeysTable(s *Store) tableDef {
	scope := "String"
	if s.caps.LowCardinality {
		scope = "LowCardinality(String)"
	}
	return tableDef{Name: TableSearchKeys,
		Columns: "project String,\n  hour DateTime,\n  scope " + scope + ",\n  key String,\n  value String,\n  total UInt8,\n" +
			"  spans UInt64,\n  version_sum UInt64,\n  version UInt64",
		Engine: engineSpec{"ReplacingMergeTree", "version"}, PartitionBy: "toYYYYMMDD(hour)",
		OrderBy: "(project, scope, key, hour, total, value)", ShardBy: "cityHash64(project)"}
}

// IndexSearchKeys computes the index of the consecutive hours marks name
// (at most a day, one computation: one Version) from the spans of versions
// up to SearchKeysUpTo(Version), all projects, then writes the marks, each
// with the span fingerprint the caller read of those spans before the
// computation. Spans are counted as stored (a duplicate delivery counts
// until merged), as the live read of the keys counts them.
func (s *Store) IndexSearchKeys(ctx context.Context, marks []SearchKeyHour) error {
	if len(marks) == 0 || len(marks) > 24 {
		return fmt.Errorf("index search keys: %d hours, want 1 to 24", len(marks))
	}
	from, to, version := marks[0].Hour.UTC(), marks[len(marks)-1].Hour.UTC().Add(time.Hour), marks[0].Version
	for i, m := range marks {
		if !m.Hour.Equal(from.Add(time.Duration(i)*time.Hour)) || m.Version != version {
			return fmt.Errorf("index search keys: the hours are not consecutive whole hours of one computation (%s)", m.Hour.Format(time.RFC3339))
		}
	}
	ver := strconv.FormatUint(version, 10)
	spans := s.Table(TableSpans)
	// Each span's span and resource attributes as one array of (scope,
	// key, value).
	pairs := "SELECT project, toStartOfHour(start) AS hour, " +
		"arrayConcat(arrayMap(k -> 'span', attr_keys), arrayMap(k -> 'resource', resource_keys)) AS scopes, " +
		"arrayConcat(attr_keys, resource_keys) AS keys, arrayConcat(attr_values, resource_values) AS vals FROM " + spans +
		" WHERE start >= ? AND start < ? AND version <= " + strconv.FormatUint(SearchKeysUpTo(version), 10)
	into := "INSERT INTO " + s.Table(TableSearchKeys) + " (project, hour, scope, key, value, total, spans, version_sum, version) "
	stmts := []string{
		into + "SELECT project, hour, sc, k, '', 1, count(), 0, " + ver + " FROM (" + pairs + ") ARRAY JOIN scopes AS sc, keys AS k" +
			" GROUP BY project, hour, sc, k",
		into + "SELECT project, hour, sc, k, v, 0, count() AS n, 0, " + ver + " FROM (" + pairs + ") ARRAY JOIN scopes AS sc, keys AS k, vals AS v" +
			" WHERE length(v) <= " + strconv.Itoa(MaxSearchKeyValueBytes) + " GROUP BY project, hour, sc, k, v" +
			" ORDER BY project, hour, sc, k, n DESC, v LIMIT " + strconv.Itoa(MaxSearchKeyValues) + " BY project, hour, sc, k",
	}
	for _, q := range stmts {
		if err := s.conn.Exec(ctx, q, from, to); err != nil {
			return fmt.Errorf("index search keys %s–%s: %w", from.Format(time.RFC3339), to.Format(time.RFC3339), err)
		}
	}
	batch, err := s.conn.PrepareBatch(ctx, into)
	if err != nil {
		return fmt.Errorf("mark indexed hours: %w", err)
	}
	for _, m := range marks {
		if err := batch.Append("", m.Hour.UTC(), "", "", "", uint8(0), m.Spans, m.VersionSum, version); err != nil {
			return fmt.Errorf("mark indexed hours: %w", err)
		}
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("mark indexed hours: %w", err)
	}
	return nil
}
