package schema

// TableAPIKeys holds tally's managed API keys. Its rows are read and written
// only by package auth (tally keys create|list|revoke, and the server's key
// cache); schema only creates it.
const TableAPIKeys = "api_keys"

// apiKeysTable is the API key table. A key is never deleted: revoking it
// writes the same id again with revoked_at set and a higher version, and
// ReplacingMergeTree keeps the latest row per id (readers still reduce by
// version, because merges are eventual). hash is the hex SHA-256 of the
// plaintext key, which is never stored. revoked_at is the Unix epoch while the
// key is active (18.16 has no Nullable default worth relying on here). In
// cluster mode sharded by id: every version of a key on one shard.
func apiKeysTable(_ *Store) tableDef {
	return tableDef{Name: TableAPIKeys,
		Columns: "id String,\n  project String,\n  scopes Array(String),\n  name String,\n  hash String,\n" +
			"  created_at DateTime,\n  revoked_at DateTime,\n  version UInt64",
		Engine: engineSpec{"ReplacingMergeTree", "version"}, OrderBy: "id", ShardBy: "cityHash64(id)"}
}
