package schema

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// TableSearchKeys is the search keys index: per project and closed hour,
// the span and resource attribute keys the hour's spans carried, with how
// many spans carried each, and each key's most frequent values. Search
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

// SearchKeyHour is an indexed hour's mark: the hour, the version of its
// computation and the span fingerprint (rows, sum of versions) it saw.
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

// IndexSearchKeys computes the index of the hours [from, to) (whole hours,
// at most a day) from the spans, all projects, as computation version, and
// then marks each hour with the fingerprint the caller read before (hours
// without a fingerprint are marked with zeros: they had no spans). Spans
// are counted as stored (a duplicate delivery counts until merged), as the
// live read of the keys counts them.
func (s *Store) IndexSearchKeys(ctx context.Context, from, to time.Time, version uint64, fingerprints map[time.Time][2]uint64) error {
	from, to = from.UTC().Truncate(time.Hour), to.UTC().Truncate(time.Hour)
	if !to.After(from) || to.Sub(from) > 24*time.Hour {
		return fmt.Errorf("index search keys: [%s, %s) is not one to 24 whole hours", from.Format(time.RFC3339), to.Format(time.RFC3339))
	}
	ver := strconv.FormatUint(version, 10)
	spans := s.Table(TableSpans)
	// Each span's span and resource attributes as one array of (scope,
	// key, value).
	pairs := "SELECT project, toStartOfHour(start) AS hour, " +
		"arrayConcat(arrayMap(k -> 'span', attr_keys), arrayMap(k -> 'resource', resource_keys)) AS scopes, " +
		"arrayConcat(attr_keys, resource_keys) AS keys, arrayConcat(attr_values, resource_values) AS vals FROM " + spans +
		" WHERE start >= ? AND start < ?"
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
	for h := from; h.Before(to); h = h.Add(time.Hour) {
		fp := fingerprints[h]
		if err := batch.Append("", h, "", "", "", uint8(0), fp[0], fp[1], version); err != nil {
			return fmt.Errorf("mark indexed hours: %w", err)
		}
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("mark indexed hours: %w", err)
	}
	return nil
}
