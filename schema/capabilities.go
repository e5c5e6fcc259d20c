package schema

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/ClickHouse/clickhouse-go/v2/lib/proto"
)

// Capabilities says which optional ClickHouse features the connected server
// has. It is the one place that decides between the portable DDL that runs on
// 18.16 (what Debian ships, and what tests run against) and the modern extras
// production servers (23.x–25.x) support.
type Capabilities struct {
	Version string // as reported by version()
	Major   int
	Minor   int

	// LowCardinality(String) columns without an experimental setting (19.9+).
	LowCardinality bool
	// Column compression codecs (19.10+).
	Codecs bool
	// Table TTL expressions (19.6+), for retention.
	TTL bool
	// Disks: the server lists its disks and their free space in
	// system.disks (19.15+), for the free-space floor.
	Disks bool
	// StringSettings: the server takes query settings serialized as
	// strings (protocol revision above 54429, 19.11+), so clickhouse-go can
	// send settings of any type. Older servers take only numeric and boolean
	// ones from it; string-valued settings (distributed_product_mode,
	// load_balancing) must then come from the user's profile. Known only
	// from a connection (DetectCapabilities).
	StringSettings bool
	// MaxPartitionsPerInsert is the server's max_partitions_per_insert_block
	// for tally's user: one INSERT block whose rows fall into more
	// partitions than this is refused whole ("Too many partitions for
	// single INSERT block", code 252). 0: no limit (18.16 has none, and 0
	// turns it off). Known only from a connection (DetectCapabilities).
	MaxPartitionsPerInsert int
	// TextIndex: the server builds full-text (text) indexes and evaluates
	// LIKE '%…%' through their token dictionary (26.x:
	// enable_full_text_index and
	// use_text_index_like_evaluation_by_dictionary_scan on), so the
	// content table gets one and a content search narrows to the granules
	// whose tokens can hold the words. Known only from a connection
	// (DetectCapabilities).
	TextIndex bool
	// AdaptiveWriteBuffers: the server can write each column stream of a
	// part through a buffer that starts at 16 KiB and grows with what the
	// stream holds (26.x, the MergeTree setting
	// min_columns_to_activate_adaptive_write_buffer), instead of about
	// 2 MiB a stream from the start. tally's spans table writes some 130
	// streams (arrays and LowCardinality columns take two), so every
	// INSERT and merge of a wide part held about 250 MiB of buffers before
	// a byte was compressed; on the embedded store that is tally's own
	// memory. Known only from a connection (DetectCapabilities).
	AdaptiveWriteBuffers bool
	// VerticalMerges: tally's tables can merge column by column whatever
	// the size of the parts (the MergeTree setting
	// vertical_merge_algorithm_min_rows_to_activate; tally sets it where
	// the server also has the newer vertical_merge_algorithm_min_bytes_to_activate,
	// 26.x). By default a merge of fewer than 131,072 rows, as every merge
	// of the small parts ingest writes is, reads and writes all columns at
	// once: under ingest on the embedded store such merges of 6–7 spans
	// parts held 50–87 MiB each, column by column 17–40 MiB, and the
	// engine's peak at sustained ingest fell from 176–207 to 83 MiB.
	// Known only from a connection (DetectCapabilities).
	VerticalMerges bool
	// PostingListCodec: the server can compress the posting lists of a
	// text index (26.x, the MergeTree setting
	// text_index_posting_list_codec; tally sets it to bitpacking, which
	// took the content's text index from 29.2 to 22.6 bytes a span on the
	// bench's ingested store, the same rows found). Known only from a
	// connection (DetectCapabilities).
	PostingListCodec bool
	// ZoneName is the server's time zone, in which toYYYYMMDD and toYYYYMM
	// cut the partitions of DateTime columns, and Zone that zone loaded
	// here: nil until detected, and when the zone database here lacks it.
	ZoneName string
	Zone     *time.Location
}

// CapabilitiesFor derives the capabilities of a server from its version string
// ("18.16.1", "24.8.4.13"). An unparseable version gets the portable subset.
func CapabilitiesFor(version string) Capabilities {
	c := Capabilities{Version: version}
	parts := strings.SplitN(version, ".", 3)
	if len(parts) >= 2 {
		c.Major, _ = strconv.Atoi(parts[0])
		c.Minor, _ = strconv.Atoi(parts[1])
	}
	atLeast := func(major, minor int) bool {
		return c.Major > major || (c.Major == major && c.Minor >= minor)
	}
	c.LowCardinality = atLeast(19, 9)
	c.Codecs = atLeast(19, 10)
	c.TTL = atLeast(19, 6)
	c.Disks = atLeast(19, 15)
	return c
}

// DetectCapabilities asks the server for its version.
func DetectCapabilities(ctx context.Context, conn driver.Conn) (Capabilities, error) {
	var v string
	if err := conn.QueryRow(ctx, "SELECT version()").Scan(&v); err != nil {
		return Capabilities{}, fmt.Errorf("detect clickhouse version: %w", err)
	}
	c := CapabilitiesFor(v)
	sv, err := conn.ServerVersion()
	if err != nil {
		return Capabilities{}, fmt.Errorf("detect clickhouse protocol revision: %w", err)
	}
	c.StringSettings = sv.Revision > proto.DBMS_MIN_REVISION_WITH_SETTINGS_SERIALIZED_AS_STRINGS
	if c.MaxPartitionsPerInsert, err = maxPartitionsPerInsert(ctx, conn); err != nil {
		return Capabilities{}, err
	}
	var on uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM system.settings WHERE name IN "+
		"('enable_full_text_index', 'use_text_index_like_evaluation_by_dictionary_scan') AND value = '1'").Scan(&on); err != nil {
		return Capabilities{}, fmt.Errorf("detect text indexes: %w", err)
	}
	c.TextIndex = on == 2
	if c.Major >= 25 { // system.merge_tree_settings is not on every old server
		var adaptive, vertical, postings uint64
		if err := conn.QueryRow(ctx, "SELECT countIf(name = '"+adaptiveWriteBufferSetting+"'), "+
			"countIf(name = 'vertical_merge_algorithm_min_bytes_to_activate'), "+
			"countIf(name = '"+postingListCodecSetting+"') FROM system.merge_tree_settings").Scan(&adaptive, &vertical, &postings); err != nil {
			return Capabilities{}, fmt.Errorf("detect adaptive write buffers, vertical merges and posting list codecs: %w", err)
		}
		c.AdaptiveWriteBuffers, c.VerticalMerges, c.PostingListCodec = adaptive == 1, vertical == 1, postings == 1
	}
	if err := conn.QueryRow(ctx, "SELECT timezone()").Scan(&c.ZoneName); err != nil {
		return Capabilities{}, fmt.Errorf("detect clickhouse time zone: %w", err)
	}
	if loc, err := time.LoadLocation(c.ZoneName); err == nil {
		c.Zone = loc
	}
	return c, nil
}

// maxPartitionsPerInsert reads the session's max_partitions_per_insert_block
// (0 when the server has no such setting, as 18.16 has not).
func maxPartitionsPerInsert(ctx context.Context, conn driver.Conn) (int, error) {
	rows, err := conn.Query(ctx, "SELECT toUInt64OrZero(value) FROM system.settings WHERE name = 'max_partitions_per_insert_block'")
	if err != nil {
		return 0, fmt.Errorf("detect max_partitions_per_insert_block: %w", err)
	}
	defer rows.Close()
	var n uint64
	for rows.Next() {
		if err := rows.Scan(&n); err != nil {
			return 0, fmt.Errorf("detect max_partitions_per_insert_block: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("detect max_partitions_per_insert_block: %w", err)
	}
	return int(min(n, 1<<20)), nil
}
