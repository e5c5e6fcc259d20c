package schema

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Data classes retention keeps for different times: spans and what is
// derived from them per span or run, the captured content (prompts and
// tool payloads: the bulk, and the sensitive part), the hourly rollups.
const (
	ClassSpans   = "spans"
	ClassContent = "content"
	ClassRollups = "rollups"
)

// RetainedTable is a table retention applies to: its data class, the
// column its partitions are cut on, and whether they are days (toYYYYMMDD)
// or months (toYYYYMM).
type RetainedTable struct {
	Name       string
	Class      string
	TimeColumn string
	Monthly    bool
	// PerProject: the table has a project column, so a project's own
	// retention can delete its rows (the rollups' record of computed hours
	// has none: rollups are kept for all projects alike).
	PerProject bool
}

// RetainedTables are the tables that age out; the others (keys, leases,
// migrations) are kept.
func RetainedTables() []RetainedTable {
	return []RetainedTable{
		{Name: TableSpans, Class: ClassSpans, TimeColumn: "start", PerProject: true},
		{Name: TableSpanFacts, Class: ClassSpans, TimeColumn: "start", PerProject: true},
		{Name: TableOutcomes, Class: ClassSpans, TimeColumn: "run_start", Monthly: true, PerProject: true},
		{Name: TableRuns, Class: ClassSpans, TimeColumn: "start", PerProject: true},
		{Name: TableRunRollup, Class: ClassSpans, TimeColumn: "hour", PerProject: true},
		{Name: TableRunRollupHours, Class: ClassSpans, TimeColumn: "hour", PerProject: true},
		{Name: TableContent, Class: ClassContent, TimeColumn: "start", PerProject: true},
		{Name: TableSearchKeys, Class: ClassSpans, TimeColumn: "hour", PerProject: true},
		{Name: TableCostRollup, Class: ClassRollups, TimeColumn: "hour", Monthly: true},
		{Name: TableCostRollupHours, Class: ClassRollups, TimeColumn: "hour", Monthly: true},
	}
}

// Partition is one partition of a retained table as the server reports it
// (system.parts, active parts; in cluster mode of every node, rows and
// bytes summed over replicas): the period it holds, [Start, End) in UTC
// (cut in the server's time zone), its rows and bytes on disk.
type Partition struct {
	Table      string
	ID         string // YYYYMMDD or YYYYMM
	Start, End time.Time
	Rows       uint64
	Bytes      uint64
}

// parsePartitionID reads a day or month partition id in loc, the server's
// time zone, in which toYYYYMMDD and toYYYYMM cut DateTime columns.
func parsePartitionID(id string, loc *time.Location) (start, end time.Time, ok bool) {
	switch len(id) {
	case 8:
		t, err := time.ParseInLocation("20060102", id, loc)
		return t.UTC(), t.AddDate(0, 0, 1).UTC(), err == nil
	case 6:
		t, err := time.ParseInLocation("200601", id, loc)
		return t.UTC(), t.AddDate(0, 1, 0).UTC(), err == nil
	}
	return time.Time{}, time.Time{}, false
}

// serverZone is the server's time zone as detected (Capabilities.Zone);
// an error when the zone database here lacks it.
func (s *Store) serverZone(ctx context.Context) (*time.Location, error) {
	if err := s.Detect(ctx); err != nil {
		return nil, err
	}
	caps := s.Capabilities()
	if caps.Zone == nil {
		return nil, fmt.Errorf("server time zone %q cannot be loaded here (install tzdata)", caps.ZoneName)
	}
	return caps.Zone, nil
}

// Partitions lists the partitions of the retained tables, oldest first per
// table. Partitions whose id is not a day or month (none tally creates)
// are left out.
func (s *Store) Partitions(ctx context.Context) ([]Partition, error) {
	names := make([]string, 0, 6)
	local := map[string]string{}
	for _, t := range RetainedTables() {
		n := t.Name
		if s.cluster != "" {
			n += "_local"
		}
		names = append(names, "'"+n+"'")
		local[n] = t.Name
	}
	loc, err := s.serverZone(ctx)
	if err != nil {
		return nil, err
	}
	// In cluster mode every node's parts: a partition may exist on some
	// shards only.
	parts := "system.parts"
	if s.cluster != "" {
		parts = "cluster('" + s.cluster + "', system.parts)"
	}
	q := "SELECT table, partition_id, sum(rows), sum(bytes_on_disk) FROM " + parts + " WHERE database = ? AND active AND table IN (" +
		strings.Join(names, ", ") + ") GROUP BY table, partition_id ORDER BY table, partition_id"
	rows, err := s.conn.Query(ctx, q, s.db)
	if err != nil {
		return nil, fmt.Errorf("list partitions: %w", err)
	}
	defer rows.Close()
	var out []Partition
	for rows.Next() {
		var p Partition
		if err := rows.Scan(&p.Table, &p.ID, &p.Rows, &p.Bytes); err != nil {
			return nil, fmt.Errorf("list partitions: %w", err)
		}
		var ok bool
		if p.Start, p.End, ok = parsePartitionID(p.ID, loc); !ok {
			continue
		}
		p.Table = local[p.Table]
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list partitions: %w", err)
	}
	return out, nil
}

// DropPartition drops one partition of a retained table (on every node in
// cluster mode): its rows are gone at once, on every ClickHouse version.
func (s *Store) DropPartition(ctx context.Context, table, id string) error {
	if _, err := strconv.ParseUint(id, 10, 32); err != nil {
		return fmt.Errorf("drop partition %s of %s: not a partition id", id, table)
	}
	q := "ALTER TABLE " + s.LocalTable(table) + s.onCluster() + " DROP PARTITION " + id
	if err := s.conn.Exec(ctx, q); err != nil {
		return fmt.Errorf("drop partition %s of %s: %w", id, table, err)
	}
	return nil
}

// AgedRows selects the rows of a retained table in [From, Before) of the
// projects listed (with Except, of every project but those; no projects
// and Except: of all). A zero From has no lower bound.
type AgedRows struct {
	Table    RetainedTable
	From     time.Time
	Before   time.Time
	Projects []string
	Except   bool
}

// where is the selection's condition and arguments.
func (a AgedRows) where() (string, []any) {
	cond := a.Table.TimeColumn + " < ?"
	args := []any{a.Before.UTC()}
	if !a.From.IsZero() {
		cond += " AND " + a.Table.TimeColumn + " >= ?"
		args = append(args, a.From.UTC())
	}
	if len(a.Projects) > 0 {
		in := "IN"
		if a.Except {
			in = "NOT IN"
		}
		cond += " AND project " + in + " (" + strings.TrimSuffix(strings.Repeat("?, ", len(a.Projects)), ", ") + ")"
		for _, p := range a.Projects {
			args = append(args, p)
		}
	}
	return cond, args
}

// DeleteAged deletes the rows a selects: a mutation, for projects whose
// retention is shorter than the partitions dropped for all. The server
// applies it in the background. A selection of no projects without Except
// deletes nothing.
func (s *Store) DeleteAged(ctx context.Context, a AgedRows) error {
	if len(a.Projects) == 0 && !a.Except {
		return nil
	}
	t, before := a.Table, a.Before
	cond, args := a.where()
	q := "ALTER TABLE " + s.LocalTable(t.Name) + s.onCluster() + " DELETE WHERE " + cond
	if err := s.conn.Exec(ctx, q, args...); err != nil {
		return fmt.Errorf("delete %s rows before %s: %w", t.Name, before.UTC().Format(time.DateTime), err)
	}
	return nil
}

// CountAged counts the rows a selects.
func (s *Store) CountAged(ctx context.Context, a AgedRows) (uint64, error) {
	if len(a.Projects) == 0 && !a.Except {
		return 0, nil
	}
	cond, args := a.where()
	var n uint64
	if err := s.conn.QueryRow(ctx, "SELECT count() FROM "+s.Table(a.Table.Name)+" WHERE "+cond, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count %s rows before %s: %w", a.Table.Name, a.Before.UTC().Format(time.DateTime), err)
	}
	return n, nil
}

// PendingMutations counts the mutations (deletes) of a retained table the
// server has not finished (on the node tally is connected to): retention
// waits for them rather than issuing another.
func (s *Store) PendingMutations(ctx context.Context, table string) (uint64, error) {
	name := table
	if s.cluster != "" {
		name += "_local"
	}
	var n uint64
	if err := s.conn.QueryRow(ctx, "SELECT count() FROM system.mutations WHERE database = ? AND table = ? AND is_done = 0", s.db, name).Scan(&n); err != nil {
		return 0, fmt.Errorf("pending mutations of %s: %w", table, err)
	}
	return n, nil
}

// LargestPart is the bytes on disk of the largest active part of the
// database: about the free space the server needs to merge it with others
// (on the node tally is connected to).
func (s *Store) LargestPart(ctx context.Context) (uint64, error) {
	var n uint64
	if err := s.conn.QueryRow(ctx, "SELECT toUInt64(max(bytes_on_disk)) FROM system.parts WHERE database = ? AND active", s.db).Scan(&n); err != nil {
		return 0, fmt.Errorf("largest part: %w", err)
	}
	return n, nil
}

// TableDisk is one table's bytes on disk and rows (active parts).
type TableDisk struct {
	Table string
	Bytes uint64
	Rows  uint64
}

// DiskUsage is the bytes on disk of every table of the database, largest
// first (in cluster mode, on the node tally is connected to).
func (s *Store) DiskUsage(ctx context.Context) ([]TableDisk, error) {
	rows, err := s.conn.Query(ctx, "SELECT table, sum(bytes_on_disk) AS b, sum(rows) FROM system.parts WHERE database = ? AND active GROUP BY table ORDER BY b DESC, table", s.db)
	if err != nil {
		return nil, fmt.Errorf("disk usage: %w", err)
	}
	defer rows.Close()
	var out []TableDisk
	for rows.Next() {
		var d TableDisk
		if err := rows.Scan(&d.Table, &d.Bytes, &d.Rows); err != nil {
			return nil, fmt.Errorf("disk usage: %w", err)
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// ServerDisk is the free and total space of the disks the ClickHouse
// server stores this database's parts on (system.disks and
// system.parts.disk_name, ClickHouse 19.15 and later), the one with the
// least free space first; ok is false on a server without them (18.16),
// which says nothing of its disks. A disk reporting no size (object
// storage) is left out.
func (s *Store) ServerDisk(ctx context.Context) (free, total uint64, ok bool, err error) {
	if !s.Capabilities().Disks {
		return 0, 0, false, nil
	}
	q := "SELECT free_space, total_space FROM system.disks WHERE total_space > 0 AND name IN " +
		"(SELECT DISTINCT disk_name FROM system.parts WHERE database = ?) ORDER BY free_space LIMIT 1"
	rows, err := s.conn.Query(ctx, q, s.db)
	if err != nil {
		return 0, 0, false, fmt.Errorf("server disks: %w", err)
	}
	defer rows.Close()
	if !rows.Next() {
		return 0, 0, false, rows.Err()
	}
	if err := rows.Scan(&free, &total); err != nil {
		return 0, 0, false, fmt.Errorf("server disks: %w", err)
	}
	return free, total, true, nil
}
