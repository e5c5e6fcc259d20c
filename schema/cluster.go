package schema

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// Cluster mode.
//
// With Config.Cluster empty (the default) every table is one MergeTree-family
// table on one server. With Config.Cluster naming a cluster of the servers'
// remote_servers, every table T becomes two, created ON CLUSTER (distributed
// DDL through ZooKeeper, which 18.16 supports for CREATE, DROP and ALTER):
//
//   - T_local on every node, with the Replicated* variant of T's engine,
//     replicated within its shard through ZooKeeper at
//     /clickhouse/tables/{shard}/<db>/T_local, replica '{replica}' (macros of
//     each node's config);
//   - T itself, a Distributed table over T_local, sharded by T's shard key.
//
// Every read and write names T (Store.Table), so no query changes: writes go
// through the Distributed table (insert_distributed_sync=1: an INSERT returns
// once each row is on a replica of its shard), reads fan out to one replica
// of each shard and merge.
//
// The shard key of every table is a function of a prefix of its
// ReplacingMergeTree key, so all rows that may replace each other land on one
// shard, where the engine's per-shard deduplication (and FINAL) sees them.
// For spans and content it is cityHash64(trace_id): a run lives on one shard,
// its tree loads from one shard, and a span delivered twice has both copies
// in the same shard (in the same partition, too: same start), so
// ReplacingMergeTree collapses them and FINAL reads one. It also makes
// `(project, trace_id) IN (SELECT … FROM spans …)` exact with
// distributed_product_mode=local, which the connection sets: the subquery
// runs on each shard over that shard's runs, which are all of their spans.
//
// The cost rollup is sharded by hour: one computation of an hour writes all
// of its rows with one version, and they all land on one shard, so "the rows
// of the latest version of each hour" (query's latestGeneration, an IN
// subquery run per shard) is the same set as on one server. The rollup is
// computed from the Distributed spans table, i.e. from every shard.
//
// Replication is asynchronous: an acknowledged INSERT is on one replica of
// its shard and reaches the other within moments (one part fetch). A read
// served by the other replica in that window does not see it yet; nothing is
// double-counted, and two tables written one after the other (the rollup and
// its hour record) may become visible on a lagging replica in either order.
// Tests wait with SYSTEM SYNC REPLICA before checking figures.

// ProfileSettings are the settings cluster mode needs in the tally user's
// profile on servers to which clickhouse-go cannot send string-valued
// settings (before 19.11, see Capabilities.StringSettings); on newer servers
// tally sends them itself. deploy/clickhouse-cluster/users-tally.xml sets them.
//
//   - distributed_product_mode=local: IN (SELECT … FROM <Distributed>) inside
//     a distributed query reads each shard's local table, which the sharding
//     keys make exact (see above); the default, deny, refuses such queries.
//   - load_balancing=in_order: each shard is read from its first live replica
//     (the others are failover), so every tally replica reads the same
//     replica and sees what any of them wrote, without replication lag.
//     random spreads reads over replicas instead, at the price of reads that
//     may briefly miss writes acknowledged through another replica.
var ProfileSettings = map[string]string{
	"distributed_product_mode": "local",
	"load_balancing":           "in_order",
}

// clusterSettings returns a connection with ProfileSettings in force: conn
// reopened with them sent by the client where the server takes string
// settings; else conn itself, after checking the user's profile sets them.
func clusterSettings(ctx context.Context, conn driver.Conn, caps Capabilities, base clickhouse.Settings,
	open func(clickhouse.Settings) (driver.Conn, error)) (driver.Conn, error) {
	if caps.StringSettings {
		settings := clickhouse.Settings{}
		for k, v := range base {
			settings[k] = v
		}
		for k, v := range ProfileSettings {
			settings[k] = v
		}
		conn.Close()
		return open(settings)
	}
	for name, want := range ProfileSettings {
		var got string
		if err := conn.QueryRow(ctx, "SELECT value FROM system.settings WHERE name = ?", name).Scan(&got); err != nil {
			conn.Close()
			return nil, fmt.Errorf("read setting %s: %w", name, err)
		}
		if got != want {
			conn.Close()
			return nil, fmt.Errorf("setting %s is %q, cluster mode needs %q: on ClickHouse %s the client cannot set it, "+
				"so set it in the tally user's profile (see deploy/clickhouse-cluster/users-tally.xml)", name, got, want, caps.Version)
		}
	}
	return conn, nil
}

// engineSpec is a MergeTree-family engine: Kind is ReplacingMergeTree,
// MergeTree, SummingMergeTree or AggregatingMergeTree, Args its arguments
// ("version" for ReplacingMergeTree(version), "" for none).
type engineSpec struct {
	Kind string
	Args string
}

// tableDef is one table as its DDL needs it. Every CREATE TABLE of tally goes
// through Store.createTable with one, so that cluster mode applies to all.
type tableDef struct {
	Name        string // the name queries use (Store.Table)
	Columns     string // the column list, as columnDDL renders it
	Engine      engineSpec
	PartitionBy string // "" for none
	OrderBy     string
	// ShardBy is the Distributed sharding expression in cluster mode: a
	// function of a prefix of OrderBy (see above). Required.
	ShardBy string
	// IndexGranularity is rows per primary-index mark; 0 keeps the server's
	// default (8192).
	IndexGranularity int
}

// Cluster is the cluster name tables are distributed over ("" on a single
// server).
func (s *Store) Cluster() string { return s.cluster }

// onCluster is the ON CLUSTER clause of DDL in cluster mode, else "".
func (s *Store) onCluster() string {
	if s.cluster == "" {
		return ""
	}
	return " ON CLUSTER `" + s.cluster + "`"
}

// LocalTable is the qualified name of the table holding the rows: the table
// itself on one server, its node-local part (<name>_local) in cluster mode.
// Only DDL and cluster maintenance (SYSTEM SYNC REPLICA) need it; queries use
// Table.
func (s *Store) LocalTable(name string) string {
	if s.cluster == "" {
		return s.Table(name)
	}
	return "`" + s.db + "`.`" + name + "_local`"
}

// engine renders a table's ENGINE clause: the engine itself on one server,
// its Replicated variant in cluster mode. It is the one place that decides
// tables' engines.
func (s *Store) engine(table string, e engineSpec) string {
	if s.cluster == "" {
		return e.Kind + "(" + e.Args + ")"
	}
	args := "'/clickhouse/tables/{shard}/" + s.db + "/" + table + "_local', '{replica}'"
	if e.Args != "" {
		args += ", " + e.Args
	}
	return "Replicated" + e.Kind + "(" + args + ")"
}

// createTable returns the statements that create t, idempotently: one CREATE
// on a single server; in cluster mode the local table and the Distributed
// table over it, both ON CLUSTER.
func (s *Store) createTable(t tableDef) []string {
	var b strings.Builder
	b.WriteString("CREATE TABLE IF NOT EXISTS " + s.LocalTable(t.Name) + s.onCluster() + " (\n  " + t.Columns + "\n)")
	b.WriteString(" ENGINE = " + s.engine(t.Name, t.Engine))
	if t.PartitionBy != "" {
		b.WriteString("\nPARTITION BY " + t.PartitionBy)
	}
	b.WriteString("\nORDER BY " + t.OrderBy)
	var settings []string
	if t.IndexGranularity > 0 {
		settings = append(settings, "index_granularity = "+strconv.Itoa(t.IndexGranularity))
	}
	settings = append(settings, s.tableSettings()...)
	if len(settings) > 0 {
		b.WriteString("\nSETTINGS " + strings.Join(settings, ", "))
	}
	stmts := []string{b.String()}
	if s.cluster != "" {
		stmts = append(stmts, fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s%s AS %s ENGINE = Distributed(`%s`, `%s`, `%s`, %s)",
			s.Table(t.Name), s.onCluster(), s.LocalTable(t.Name), s.cluster, s.db, t.Name+"_local", t.ShardBy))
	}
	return stmts
}

// adaptiveWriteBufferSetting is the MergeTree setting of
// Capabilities.AdaptiveWriteBuffers: the number of columns from which a
// part is written through adaptive buffers.
const adaptiveWriteBufferSetting = "min_columns_to_activate_adaptive_write_buffer"

// verticalMergeSetting is the MergeTree setting of
// Capabilities.VerticalMerges: the rows from which a merge goes column by
// column.
const verticalMergeSetting = "vertical_merge_algorithm_min_rows_to_activate"

// postingListCodecSetting is the MergeTree setting of
// Capabilities.PostingListCodec: the codec of the posting lists of the
// table's text indexes, for the parts written from then on (a part's index
// records its codec, so parts of either kind are read).
const postingListCodecSetting = "text_index_posting_list_codec"

// tableSettings are the MergeTree settings every table of tally gets on
// this server, as "name = value": adaptive write buffers, column-by-column
// merges and compressed posting lists (only content has a text index) for
// all, where the server has them (Capabilities).
func (s *Store) tableSettings() []string {
	var out []string
	if s.caps.AdaptiveWriteBuffers {
		out = append(out, adaptiveWriteBufferSetting+" = 1")
	}
	if s.caps.VerticalMerges {
		out = append(out, verticalMergeSetting+" = 1")
	}
	if s.caps.PostingListCodec {
		out = append(out, postingListCodecSetting+" = 'bitpacking'")
	}
	return out
}

// columnTables are the tables (unquoted names, in s's database) an ALTER
// of table name must change: on one server the table; in cluster mode its
// local table and the Distributed table over it, whose columns must match
// (each ALTER runs ON CLUSTER).
func (s *Store) columnTables(name string) []string {
	if s.cluster == "" {
		return []string{name}
	}
	return []string{name + "_local", name}
}

// createTables concatenates the statements of several tables.
func (s *Store) createTables(defs ...tableDef) []string {
	var out []string
	for _, d := range defs {
		out = append(out, s.createTable(d)...)
	}
	return out
}

// SyncReplicaStatements are the statements that make the connected node's
// replicas of every table catch up with their shard (SYSTEM SYNC REPLICA),
// for tests and maintenance that must read what was just written on another
// replica. Empty on a single server.
func (s *Store) SyncReplicaStatements() []string {
	if s.cluster == "" {
		return nil
	}
	var out []string
	for _, name := range s.tableNames() {
		out = append(out, "SYSTEM SYNC REPLICA "+s.LocalTable(name))
	}
	return out
}

// tableNames lists every table the migrations create, in order, with the
// migrations table first.
func (s *Store) tableNames() []string {
	names := []string{TableMigrations}
	for _, m := range migrations {
		if m.tables == nil {
			continue
		}
		for _, d := range m.tables(s) {
			names = append(names, d.Name)
		}
	}
	return names
}
