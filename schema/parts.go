package schema

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2"
)

// DetachedPart is a part of one of tally's tables that the server set
// aside (in the table's detached/ directory) for a reason of its own: a
// part it found damaged at start ("broken-on-start"), one it could not
// account for ("unexpected"), and the like. Its rows are not read until an
// operator attaches it again (see docs/operations.md, "A damaged part").
type DetachedPart struct {
	Table       string `json:"table"`
	PartitionID string `json:"partition_id"`
	Name        string `json:"name"`
	Reason      string `json:"reason"`
}

// DetachedParts lists the parts of tally's database the server detached
// for a reason (not those an operator detached, which have none). Servers
// without system.detached_parts (18.16) report none. In cluster mode the
// parts of the node connected to.
func (s *Store) DetachedParts(ctx context.Context) ([]DetachedPart, error) {
	ok, err := s.exists(ctx, "SELECT count() FROM system.tables WHERE database = 'system' AND name = 'detached_parts'")
	if err != nil || !ok {
		return nil, err
	}
	rows, err := s.conn.Query(ctx, "SELECT table, ifNull(partition_id, ''), name, ifNull(reason, '') FROM system.detached_parts "+
		"WHERE database = ? AND ifNull(reason, '') != '' ORDER BY table, name", s.db)
	if err != nil {
		return nil, fmt.Errorf("list detached parts: %w", err)
	}
	defer rows.Close()
	var out []DetachedPart
	for rows.Next() {
		var p DetachedPart
		if err := rows.Scan(&p.Table, &p.PartitionID, &p.Name, &p.Reason); err != nil {
			return nil, fmt.Errorf("list detached parts: %w", err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list detached parts: %w", err)
	}
	return out, nil
}

// damagedCodes are ClickHouse's answers to a read of a damaged part: a
// checksum that does not match, a file shorter than its marks, data that
// does not decompress.
var damagedCodes = map[int32]bool{
	32:  true, // ATTEMPT_TO_READ_AFTER_EOF
	33:  true, // CANNOT_READ_ALL_DATA
	39:  true, // TOO_LARGE_SIZE_COMPRESSED ("Most likely corrupted data")
	40:  true, // CHECKSUM_DOESNT_MATCH
	246: true, // CORRUPTED_DATA
	271: true, // CANNOT_DECOMPRESS
	432: true, // UNKNOWN_CODEC: a block header damaged
}

// Damaged reports whether err is the server failing a read on a damaged
// part of the store, so that the answer can say so rather than "internal
// error": one of the codes a damaged file gives (which depends on which
// bytes are damaged), or a message saying the data is corrupted.
func Damaged(err error) bool {
	var ex *clickhouse.Exception
	if !errors.As(err, &ex) {
		return false
	}
	return damagedCodes[ex.Code] || strings.Contains(ex.Message, "corrupted data")
}
