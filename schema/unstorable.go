package schema

import (
	"errors"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2"
)

// transientCodes are ClickHouse error codes that say the server could not
// take a write now, not that it refuses the rows: a retry may succeed.
var transientCodes = map[int32]bool{
	3:    true, // UNEXPECTED_END_OF_FILE
	32:   true, // ATTEMPT_TO_READ_AFTER_EOF
	60:   true, // UNKNOWN_TABLE: a schema not migrated yet
	81:   true, // UNKNOWN_DATABASE
	159:  true, // TIMEOUT_EXCEEDED
	160:  true, // TOO_SLOW
	164:  true, // READONLY
	192:  true, // UNKNOWN_USER
	202:  true, // TOO_MANY_SIMULTANEOUS_QUERIES
	203:  true, // NO_FREE_CONNECTION
	209:  true, // SOCKET_TIMEOUT
	210:  true, // NETWORK_ERROR
	225:  true, // NO_ZOOKEEPER
	236:  true, // ABORTED
	241:  true, // MEMORY_LIMIT_EXCEEDED
	242:  true, // TABLE_IS_READ_ONLY
	243:  true, // NOT_ENOUGH_SPACE
	279:  true, // ALL_CONNECTION_TRIES_FAILED
	285:  true, // TOO_FEW_LIVE_REPLICAS
	286:  true, // UNSATISFIED_QUORUM_FOR_PREVIOUS_WRITE
	319:  true, // UNKNOWN_STATUS_OF_INSERT
	341:  true, // UNFINISHED
	373:  true, // SESSION_IS_LOCKED
	394:  true, // QUERY_WAS_CANCELLED
	425:  true, // SYSTEM_ERROR
	439:  true, // CANNOT_SCHEDULE_TASK
	473:  true, // DEADLOCK_AVOIDED
	497:  true, // ACCESS_DENIED
	516:  true, // AUTHENTICATION_FAILED
	999:  true, // KEEPER_EXCEPTION
	1000: true, // POCO_EXCEPTION
	1001: true, // STD_EXCEPTION
}

// tooManyParts is ClickHouse's code 252, which it gives both for a table
// whose merges lag behind ("Too many parts": transient) and for one INSERT
// block over max_partitions_per_insert_block ("Too many partitions": the
// rows themselves).
const tooManyParts = 252

// OutOfMemory reports whether err is the store refusing a statement for
// its memory limit (MEMORY_LIMIT_EXCEEDED): on the embedded store
// --embedded-max-memory, on a server its own limits. The statement may
// pass later, or over a shorter window.
func OutOfMemory(err error) bool {
	var ex *clickhouse.Exception
	return errors.As(err, &ex) && ex.Code == memoryLimitExceeded
}

// memoryLimitExceeded is ClickHouse's MEMORY_LIMIT_EXCEEDED.
const memoryLimitExceeded = 241

// Unstorable reports whether err is the server refusing the rows of a
// write for what they are, so that the same rows would be refused again:
// a ClickHouse exception that is not one of the transient ones (the
// server unreachable, out of memory or disk, overloaded, not migrated, a
// table with too many parts). Errors that are not the server's answer
// (connection refused, timeouts on this side) are not. The durable log's
// drain dead-letters a record the store refuses this way again and again
// when it is written alone (package ingest/durable).
func Unstorable(err error) bool {
	var ex *clickhouse.Exception
	if !errors.As(err, &ex) {
		return false
	}
	if ex.Code == tooManyParts {
		return strings.Contains(ex.Message, "partitions")
	}
	return !transientCodes[ex.Code]
}
