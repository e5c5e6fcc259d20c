package schema

import "time"

// VersionClock hands out the versions a writer stamps on the rows it
// rewrites (ReplacingMergeTree's version: the highest wins): the clock in
// nanoseconds, moved past the last one handed out, so that two writes in
// the same nanosecond, or across a clock step back, still order. The zero
// value is ready; it is not safe for concurrent use (its owner serializes
// its writes).
type VersionClock struct{ last uint64 }

// Next returns a version above every one this clock returned before.
func (c *VersionClock) Next() uint64 {
	c.last = max(uint64(time.Now().UnixNano()), c.last+1)
	return c.last
}
