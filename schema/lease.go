package schema

import (
	"context"
)

// TableLeases holds named leases: which tally process holds a role that only
// one may hold at a time (the alert evaluator), and until when. Its rows are
// read and written by package lease.
const TableLeases = "leases"

// LeaseRow is one claim or renewal of a lease. The row with the highest
// Version is the lease's state; ExpiresNs 0 is a release.
type LeaseRow struct {
	Name      string `ch:"name"`
	Holder    string `ch:"holder"`
	ExpiresNs uint64 `ch:"expires_ns"` // Unix nanoseconds, the holder's clock
	Version   uint64 `ch:"version"`    // Unix nanoseconds of the write, made unique per lease
}

var leaseColumns = []column[LeaseRow]{
	strCol("name", func(r *LeaseRow) string { return r.Name }),
	strCol("holder", func(r *LeaseRow) string { return r.Holder }),
	u64Col("expires_ns", func(r *LeaseRow) uint64 { return r.ExpiresNs }),
	u64Col("version", func(r *LeaseRow) uint64 { return r.Version }),
}

// leasesTable is the lease table: ReplacingMergeTree keyed by name, so old
// claims collapse; readers take the highest version (argMax), since merges
// are eventual. Sharded by name in cluster mode: every claim of one lease on
// one shard, so argMax over the Distributed table sees them all.
func leasesTable(s *Store) tableDef {
	return tableDef{Name: TableLeases, Columns: columnDDL(leaseColumns, s.caps),
		Engine: engineSpec{"ReplacingMergeTree", "version"}, OrderBy: "name", ShardBy: "cityHash64(name)"}
}

// InsertLease writes one lease row.
func (s *Store) InsertLease(ctx context.Context, row LeaseRow) error {
	return insertColumns(ctx, s.conn, s.Table(TableLeases), leaseColumns, []LeaseRow{row}, nil, 0, partitioner[LeaseRow]{})
}
