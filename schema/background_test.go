package schema_test

import (
	"context"
	"testing"

	"github.com/tallyhq/tally/schema"
)

// TestBackgroundStatementsTakeOneThread: a statement made under
// schema.Background runs with one thread and blocks of 1,024 rows, and
// one made without it (a user's read) with the store's defaults, on the
// same connections just after.
func TestBackgroundStatementsTakeOneThread(t *testing.T) {
	s := migratedStore(t)
	settings := func(ctx context.Context) (threads, block string) {
		t.Helper()
		if err := s.Conn().QueryRow(ctx, "SELECT (SELECT value FROM system.settings WHERE name = 'max_threads'), "+
			"(SELECT value FROM system.settings WHERE name = 'max_block_size')").Scan(&threads, &block); err != nil {
			t.Fatal(err)
		}
		return threads, block
	}
	for range 2 {
		if threads, block := settings(schema.Background(context.Background())); threads != "1" || block != "1024" {
			t.Errorf("background statement: max_threads %s, max_block_size %s; want 1 and 1024", threads, block)
		}
		if threads, block := settings(context.Background()); threads == "1" || block == "1024" {
			t.Errorf("a user's statement after a background one: max_threads %s, max_block_size %s; want the defaults", threads, block)
		}
	}
}
