// Package attribution holds tally's cost rules over spans already read: which
// spans' usage and cost count in a run (counted.go), what each span is
// attributed to — agent, task, tool, conversation, user — (attribute.go),
// which tool calls are retries (retry.go), what those retries cost
// (retrytax.go), and whether prompt caching works (cache.go).
//
// It does no I/O: no SQL, no ClickHouse, no store. Package query loads rows
// and calls these functions; the one rule that also runs inside ClickHouse,
// the counting rule, has its SQL twin in query (runCountedSQL), next to the
// queries that need it.
package attribution

import (
	"encoding/json"
	"math"
)

// Usage holds the token buckets of a span or a sum of spans. Buckets do not
// overlap except as documented: Input includes CacheRead and CacheWrite,
// Output includes Reasoning.
type Usage struct {
	Input      uint64 `json:"input_tokens"`
	CacheRead  uint64 `json:"cache_read_tokens"`
	CacheWrite uint64 `json:"cache_write_tokens"`
	Output     uint64 `json:"output_tokens"`
	Reasoning  uint64 `json:"reasoning_tokens"`
}

// Add adds o's buckets to u's.
func (u *Usage) Add(o Usage) {
	u.Input += o.Input
	u.CacheRead += o.CacheRead
	u.CacheWrite += o.CacheWrite
	u.Output += o.Output
	u.Reasoning += o.Reasoning
}

// IsZero reports whether every bucket is zero.
func (u Usage) IsZero() bool { return u == Usage{} }

// Cost is a cost in USD split by what was paid for.
type Cost struct {
	Total      float64 `json:"total_usd"`
	Input      float64 `json:"input_usd"`
	CacheRead  float64 `json:"cache_read_usd"`
	CacheWrite float64 `json:"cache_write_usd"`
	Output     float64 `json:"output_usd"`
}

// MarshalJSON writes each amount rounded to 1e-10 USD (a ten-thousandth of
// a micro-dollar, far below any price), so sums do not show float noise
// such as 4.420340110000005.
func (c Cost) MarshalJSON() ([]byte, error) {
	type plain Cost
	return json.Marshal(plain{RoundUSD(c.Total), RoundUSD(c.Input), RoundUSD(c.CacheRead), RoundUSD(c.CacheWrite), RoundUSD(c.Output)})
}

// RoundUSD rounds an amount to 1e-10 USD, as Cost's JSON shows it.
func RoundUSD(v float64) float64 { return math.Round(v*1e10) / 1e10 }

// Add adds o's parts to c's.
func (c *Cost) Add(o Cost) {
	c.Total += o.Total
	c.Input += o.Input
	c.CacheRead += o.CacheRead
	c.CacheWrite += o.CacheWrite
	c.Output += o.Output
}
