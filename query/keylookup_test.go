package query_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tallyhq/tally/query"
)

// TestKeyLookupsFitAStatement: every lookup of the run table by key
// (start second and run id) names at most query.KeyLookupChunk keys, and
// with that many keys of the longest kind each statement is one the store
// takes (ClickHouse refuses a statement over max_query_size, 256 KiB, as
// it does 8,000 keys). The 5,000 keys the flagged runs' read named before
// (their starts as toDateTime calls; it finds its keys by a subquery now)
// did not fit: a safety review of 7 days at a 100M-span store's density
// failed with "Max query size exceeded".
func TestKeyLookupsFitAStatement(t *testing.T) {
	store := openStore(t)
	ctx := context.Background()
	run := func(q string, args []any) error {
		rows, err := store.Conn().Query(ctx, q, args...)
		if err != nil {
			return err
		}
		for rows.Next() {
		}
		err = rows.Err()
		rows.Close()
		return err
	}
	for name, l := range query.KeyLookups(store, query.KeyLookupChunk) {
		t.Run(name, func(t *testing.T) {
			if err := run(l.SQL, l.Args); err != nil {
				t.Errorf("%d keys: %v", query.KeyLookupChunk, err)
			}
		})
	}
	over := query.KeyLookups(store, 8000)["configurations"]
	if err := run(over.SQL, over.Args); err == nil || !strings.Contains(err.Error(), "Max query size exceeded") {
		t.Errorf("8,000 keys: %v, want the store to refuse the statement as too long", err)
	}
}
