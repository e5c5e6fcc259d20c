package query

import (
	"fmt"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// scanAll reads every row of rows into a T, through dest (the scan
// destinations of one T's fields, in the query's column order), closes rows
// and returns the Ts in row order. The reads that return their rows as a
// list go through it, post-processing (a flag from a UInt8, a map key) on
// the result, not inside the loop; the reads that fold rows as they come
// (a trace id prefix lookup, outcomes into maps, the safety review's and
// classifyWindow's run-by-run streams, versions' fingerprints) loop
// themselves so as not to hold every row at once.
func scanAll[T any](rows driver.Rows, dest func(*T) []any) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		out = append(out, *new(T))
		if err := rows.Scan(dest(&out[len(out)-1])...); err != nil {
			return nil, fmt.Errorf("scan: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}
