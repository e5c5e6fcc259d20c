package schema

import (
	"slices"
	"testing"
)

func TestCreateTableSingleAndCluster(t *testing.T) {
	def := tableDef{Name: "leases", Columns: "name String, version UInt64",
		Engine: engineSpec{"ReplacingMergeTree", "version"}, OrderBy: "name", ShardBy: "cityHash64(name)"}
	tests := []struct {
		name    string
		cluster string
		want    []string
	}{
		{"one server", "", []string{
			"CREATE TABLE IF NOT EXISTS `tally`.`leases` (\n  name String, version UInt64\n) ENGINE = ReplacingMergeTree(version)\nORDER BY name",
		}},
		{"cluster", "prod", []string{
			"CREATE TABLE IF NOT EXISTS `tally`.`leases_local` ON CLUSTER `prod` (\n  name String, version UInt64\n)" +
				" ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/tally/leases_local', '{replica}', version)\nORDER BY name",
			"CREATE TABLE IF NOT EXISTS `tally`.`leases` ON CLUSTER `prod` AS `tally`.`leases_local`" +
				" ENGINE = Distributed(`prod`, `tally`, `leases_local`, cityHash64(name))",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &Store{db: "tally", cluster: tc.cluster}
			if got := s.createTable(def); !slices.Equal(got, tc.want) {
				t.Errorf("createTable:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestEngineWithoutArguments(t *testing.T) {
	s := &Store{db: "d", cluster: "c"}
	want := "ReplicatedMergeTree('/clickhouse/tables/{shard}/d/t_local', '{replica}')"
	if got := s.engine("t", engineSpec{Kind: "MergeTree"}); got != want {
		t.Errorf("engine = %q, want %q", got, want)
	}
	if got := (&Store{db: "d"}).engine("t", engineSpec{Kind: "MergeTree"}); got != "MergeTree()" {
		t.Errorf("single-server engine = %q, want MergeTree()", got)
	}
}

// Every table's sharding key must be set, or its Distributed table would
// be created without one.
func TestEveryTableHasAShardKey(t *testing.T) {
	s := &Store{db: "d", cluster: "c"}
	for _, m := range migrations {
		if m.tables == nil {
			continue
		}
		for _, d := range m.tables(s) {
			if d.ShardBy == "" {
				t.Errorf("migration %d: table %s has no ShardBy", m.version, d.Name)
			}
		}
	}
}
