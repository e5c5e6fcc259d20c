package schema

import (
	"slices"
	"time"
)

// partitioner cuts an INSERT's rows by the partition each falls into, so
// that no statement exceeds the server's max_partitions_per_insert_block
// (see Insert). The zero partitioner has no limit: one statement.
type partitioner[R any] struct {
	max   int // Capabilities.MaxPartitionsPerInsert, halved when UTC stands in for the zone
	zone  *time.Location
	start func(*R) time.Time
	month bool // partitions are months (toYYYYMM), not days
	// The last partition computed, as the Unix seconds it covers: rows of
	// one partition follow each other, so most rows cost two comparisons.
	lo, hi int64
	key    int32
}

// newPartitioner cuts rows by the day of start, in the server's zone.
func newPartitioner[R any](caps Capabilities, start func(*R) time.Time) partitioner[R] {
	p := partitioner[R]{max: caps.MaxPartitionsPerInsert, zone: caps.Zone, start: start}
	if p.zone == nil {
		// The server's zone cannot be loaded here: a day in UTC may touch
		// two of the server's days.
		p.zone = time.UTC
		if p.max > 0 {
			p.max = max(1, p.max/2)
		}
	}
	return p
}

// spanPartitions and contentPartitions cut spans and content rows by the
// day of their start, the tables' partition key.
func spanPartitions(caps Capabilities) partitioner[Span] {
	return newPartitioner(caps, func(r *Span) time.Time { return r.Start })
}

func contentPartitions(caps Capabilities) partitioner[Content] {
	return newPartitioner(caps, func(r *Content) time.Time { return r.Start })
}

// newMonthPartitioner cuts rows by the month of start (toYYYYMM).
func newMonthPartitioner[R any](caps Capabilities, start func(*R) time.Time) partitioner[R] {
	p := newPartitioner(caps, start)
	p.month = true
	return p
}

// limit is the most partitions one statement may take; 0 for no limit.
func (p *partitioner[R]) limit() int {
	if p.start == nil {
		return 0
	}
	return p.max
}

// day is the partition r falls into (YYYYMMDD or YYYYMM, as the server
// names it).
func (p *partitioner[R]) day(r *R) int32 {
	t := p.start(r)
	u := t.Unix()
	if p.hi > p.lo && u >= p.lo && u < p.hi {
		return p.key
	}
	t = t.In(p.zone)
	y, m, d := t.Date()
	var from, to time.Time
	if p.month {
		from = time.Date(y, m, 1, 0, 0, 0, 0, p.zone)
		to = from.AddDate(0, 1, 0)
		p.key = int32(y*100 + int(m))
	} else {
		from = time.Date(y, m, d, 0, 0, 0, 0, p.zone)
		to = from.AddDate(0, 0, 1)
		p.key = int32(y*10000 + int(m)*100 + d)
	}
	p.lo, p.hi = from.Unix(), to.Unix()
	return p.key
}

// eachDay calls f with the partition of each row, once per run of rows
// in the same partition, until f returns false.
func (p *partitioner[R]) eachDay(rows []R, f func(int32) bool) {
	last, any := int32(0), false
	for i := range rows {
		d := p.day(&rows[i])
		if any && d == last {
			continue
		}
		last, any = d, true
		if !f(d) {
			return
		}
	}
}

// newDays is the partitions of rows that are not in have, and false as
// soon as there are more than room of them.
func (p *partitioner[R]) newDays(rows []R, have map[int32]struct{}, room int) ([]int32, bool) {
	var fresh []int32
	fits := true
	p.eachDay(rows, func(d int32) bool {
		if _, ok := have[d]; ok || slices.Contains(fresh, d) {
			return true
		}
		if len(fresh) == room {
			fits = false
			return false
		}
		fresh = append(fresh, d)
		return true
	})
	return fresh, fits
}

// addDays records the partitions of rows in have.
func (p *partitioner[R]) addDays(rows []R, have map[int32]struct{}) {
	p.eachDay(rows, func(d int32) bool {
		have[d] = struct{}{}
		return true
	})
}
