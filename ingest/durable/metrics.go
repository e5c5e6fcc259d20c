package durable

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Register exports the log's figures on reg (tally_wal_*, and
// tally_dead_letter_entries with a dead-letter directory), read from Stats
// at each scrape.
func (s *Sink) Register(reg prometheus.Registerer) error {
	gauge := func(name, help string, f func(Stats) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return f(s.Stats()) })
	}
	counter := func(name, help string, f func(Stats) float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return f(s.Stats()) })
	}
	for _, c := range []prometheus.Collector{
		gauge("tally_wal_bytes", "Bytes of acknowledged spans in the durable log not yet in ClickHouse.", func(s Stats) float64 { return float64(s.WALBytes) }),
		gauge("tally_wal_max_bytes", "Durable log size cap.", func(s Stats) float64 { return float64(s.WALMaxBytes) }),
		gauge("tally_wal_pending_records", "Durable log records not yet delivered to ClickHouse.", func(s Stats) float64 { return float64(s.PendingRecords) }),
		counter("tally_wal_appended_spans_total", "Spans appended (acknowledged).", func(s Stats) float64 { return float64(s.AppendedSpans) }),
		counter("tally_wal_delivered_spans_total", "Spans delivered from the durable log to ClickHouse.", func(s Stats) float64 { return float64(s.DeliveredSpans) }),
		counter("tally_wal_delivery_retries_total", "Retries delivering to ClickHouse.", func(s Stats) float64 { return float64(s.Retries) }),
		counter("tally_wal_refused_full_total", "Requests refused because the durable log was full.", func(s Stats) float64 { return float64(s.RefusedFull) }),
		counter("tally_wal_paced_total", "Requests whose acknowledgement waited for ClickHouse to catch up (--wal-pace-bytes).", func(s Stats) float64 { return float64(s.Paced) }),
		counter("tally_wal_paced_seconds_total", "Time requests waited for ClickHouse to catch up, summed.", func(s Stats) float64 { return s.PacedSeconds }),
		counter("tally_wal_dead_lettered_total", "Records the store refused alone again and again, moved to the dead-letter directory (since start).", func(s Stats) float64 { return float64(s.DeadLettered) }),
		gauge("tally_wal_drain_failing_seconds", "How long the durable log's writes to the store have failed without one succeeding (0 while they succeed).", func(s Stats) float64 { return s.FailingFor.Seconds() }),
	} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("register durable log metrics: %w", err)
		}
	}
	if dir := s.DeadLetters(); dir != nil {
		entries := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tally_dead_letter_entries",
			Help: "Entries in the dead-letter directory: acknowledged records the store refused, waiting for an operator (tally deadletter)."},
			func() float64 {
				n, err := dir.Count()
				if err != nil {
					return -1
				}
				return float64(n)
			})
		if err := reg.Register(entries); err != nil {
			return fmt.Errorf("register dead-letter metrics: %w", err)
		}
	}
	return nil
}
