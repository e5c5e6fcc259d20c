package schema

// TableSearchKeys counts, per project and hour, the spans that carried
// each span attribute key (scope "span") and each resource attribute key
// (scope "resource"): the index search's autocomplete reads, so that
// listing a day's keys reads a few thousand rows instead of every span of
// the day. Two materialized views fill it from every INSERT into spans; it
// is a SummingMergeTree, so the rows of one (project, hour, scope, key)
// add up as parts merge (readers sum them). The counts are hints for
// ordering suggestions: a span stored twice (an exporter's retry) counts
// twice, and the spans stored while migration 10 ran may count twice.
const TableSearchKeys = "search_keys"

// The views feeding search_keys, one per scope.
const (
	viewSearchKeysSpan     = "search_keys_span_mv"
	viewSearchKeysResource = "search_keys_resource_mv"
)

// searchKeysTable is the keys index: (project, hour, scope, key) → spans,
// partitioned by month like the rollups, sharded by project.
func searchKeysTable(s *Store) tableDef {
	low := "String"
	if s.caps.LowCardinality {
		low = "LowCardinality(String)"
	}
	return tableDef{Name: TableSearchKeys,
		Columns: "project String,\n  hour DateTime,\n  scope " + low + ",\n  key String,\n  spans UInt64",
		Engine:  engineSpec{"SummingMergeTree", "spans"}, PartitionBy: "toYYYYMM(hour)",
		OrderBy: "(project, hour, scope, key)", ShardBy: "cityHash64(project)"}
}

// searchKeysSelect is the SELECT that counts the keys of the spans of
// from in one scope (its keys column).
func searchKeysSelect(from, scope, keys string) string {
	return "SELECT project, toStartOfHour(start) AS hour, '" + scope + "' AS scope, k AS key, count() AS spans FROM " + from +
		" ARRAY JOIN " + keys + " AS k GROUP BY project, hour, key"
}

// searchKeysStatements create the views that keep search_keys, then count
// the keys of the spans already stored (in that order: a span written in
// between counts twice rather than not at all).
func searchKeysStatements(s *Store) []string {
	var out []string
	for _, v := range []struct{ view, scope, keys string }{
		{viewSearchKeysSpan, "span", "attr_keys"},
		{viewSearchKeysResource, "resource", "resource_keys"},
	} {
		out = append(out, "CREATE MATERIALIZED VIEW IF NOT EXISTS `"+s.db+"`.`"+v.view+"`"+s.onCluster()+" TO "+s.LocalTable(TableSearchKeys)+
			" AS "+searchKeysSelect(s.LocalTable(TableSpans), v.scope, v.keys))
	}
	for _, v := range []struct{ scope, keys string }{{"span", "attr_keys"}, {"resource", "resource_keys"}} {
		out = append(out, "INSERT INTO "+s.Table(TableSearchKeys)+" (project, hour, scope, key, spans) "+
			searchKeysSelect(s.Table(TableSpans), v.scope, v.keys))
	}
	return out
}
