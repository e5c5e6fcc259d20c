package schema_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/tallyhq/tally/schema"
)

func TestUnstorable(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"too many partitions", &clickhouse.Exception{Code: 252, Message: "Too many partitions for single INSERT block (more than 100)"}, true},
		{"too many parts: merges lag", &clickhouse.Exception{Code: 252, Message: "Too many parts (300). Merges are processing significantly slower than inserts"}, false},
		{"a type mismatch, wrapped", fmt.Errorf("insert 10 span rows: %w", &clickhouse.Exception{Code: 53, Message: "Type mismatch"}), true},
		{"out of memory", &clickhouse.Exception{Code: 241, Message: "Memory limit (total) exceeded"}, false},
		{"out of disk", &clickhouse.Exception{Code: 243, Message: "Cannot reserve 1.00 MiB, not enough space"}, false},
		{"over HTTP", &clickhouse.HTTPError{StatusCode: 500, Err: &clickhouse.Exception{Code: 252, Message: "Too many partitions for single INSERT block"}}, true},
		{"connection refused", errors.New("dial tcp 127.0.0.1:9000: connect: connection refused"), false},
		{"a deadline here", context.DeadlineExceeded, false},
	} {
		if got := schema.Unstorable(c.err); got != c.want {
			t.Errorf("%s: Unstorable = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestDamaged: the answers ClickHouse gives to a read of a damaged part
// (which depends on the bytes damaged) are recognized; others are not.
func TestDamaged(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&clickhouse.Exception{Code: 40, Message: "Checksum doesn't match: corrupted data"}, true},
		{&clickhouse.Exception{Code: 39, Message: "Too large size_compressed_without_checksum: 1509949474. Most likely corrupted data"}, true},
		{fmt.Errorf("list runs: %w", &clickhouse.HTTPError{StatusCode: 500, Err: &clickhouse.Exception{Code: 271, Message: "Cannot decompress"}}), true},
		{&clickhouse.Exception{Code: 1001, Message: "std::exception: corrupted data in block"}, true},
		{&clickhouse.Exception{Code: 241, Message: "Memory limit (total) exceeded"}, false},
		{errors.New("connection reset by peer"), false},
	} {
		if got := schema.Damaged(c.err); got != c.want {
			t.Errorf("Damaged(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
