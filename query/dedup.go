package query

import "github.com/tallyhq/tally/schema"

// Deduplication: how each read sees every span once.
//
// Rows of one span identity (project, trace id, span id) repeat until
// ClickHouse merges them: an exporter retry, a replay from the durable log,
// a reprice's newer version. Every read names one of these ways, the
// cheapest that is right for what it reads:
//
//   - final(table): whole rows, the highest version (FINAL). For reads of
//     one run or a few (run trees, content, fixtures, a run summary) and
//     for reads that need the latest version of each row.
//   - latestOf(identity): the highest version per identity, in a subquery,
//     whichever partitions the copies are in. For tables whose partition
//     key can differ between a row and its replacement (outcomes), for
//     the run table's rows of runs scattered over a window, read by key
//     (currentByKey), and for a run read whole on a modern server
//     (latestRunRows), where FINAL's merge is a fixed cost a third of the
//     read.
//   - onePerSpan: LIMIT 1 BY the identity, in a subquery. For aggregates
//     over a window's spans whose figures are the same in every copy
//     (durations, statuses, tool names): it keeps the first copy seen and
//     spares FINAL's merge, single-threaded on ClickHouse 18.16.
//   - no deduplication in SQL, the highest version kept in Go
//     (attribution.Attribute): cost attribution, which loads whole runs.
//   - a figure a duplicate cannot change: min/max per span (a run's start,
//     a tool's slowest call), uniqExact of the identity (counts).

// final is table read deduplicated, whole rows at their highest version.
func final(table string) string { return table + " FINAL" }

// latestOf ends a subquery that keeps each identity's highest version.
func latestOf(identity string) string { return "ORDER BY version DESC LIMIT 1 BY " + identity }

// currentByKey ends a subquery of the run table's rows read by key (start
// and run id), keeping each key's highest version, as FINAL would. FINAL
// is not used for these reads: on ClickHouse 18.16 it opens every column
// of every part that holds a key at once (a 1 MiB buffer each), and the
// page of a run list sorted by cost over 30 days, whose runs are in every
// part of the window, needed more than the 3.7 GiB a query may use with
// 118 parts; the read of every version takes a few buffers a thread.
const currentByKey = "\nORDER BY version DESC LIMIT 1 BY start, trace_id"

// finalRuns is the FROM and WHERE (where, which starts with " WHERE") of
// a subquery that reads a window of the run table with FINAL, with read
// buffers of 64 KiB instead of 1 MiB: FINAL on 18.16 holds one buffer per
// column of every part of the window at once, and the run table's parts
// multiply as the settler writes (a part per load until merges catch
// up): 120 parts passed a 256 MiB cap with 1 MiB buffers. The reads go
// through the page cache, so the smaller buffer costs syscalls, not disk
// reads.
func finalRuns(t tables, where string) string {
	return " FROM " + final(t.Table(schema.TableRuns)) + where + "\nSETTINGS max_read_buffer_size = 65536"
}

// onePerSpan ends a subquery that keeps one copy of each span.
const onePerSpan = "LIMIT 1 BY trace_id, span_id"
