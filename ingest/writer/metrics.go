package writer

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Register exports the writer's counters on reg (tally_writer_*), read
// from Stats at each scrape.
func (w *Writer) Register(reg prometheus.Registerer) error {
	stat := func(f func(Stats) float64) func() float64 { return func() float64 { return f(w.Stats()) } }
	for _, c := range []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tally_writer_queued_rows", Help: "Rows accepted by the writer and not yet inserted into ClickHouse."},
			stat(func(s Stats) float64 { return float64(s.QueuedSpans) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "tally_writer_written_spans_total", Help: "Span rows inserted into ClickHouse."},
			stat(func(s Stats) float64 { return float64(s.WrittenSpans) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "tally_writer_insert_errors_total", Help: "Failed ClickHouse INSERT attempts (each is retried)."},
			stat(func(s Stats) float64 { return float64(s.InsertErrors) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "tally_writer_batches_total", Help: "ClickHouse INSERT batches written."},
			stat(func(s Stats) float64 { return float64(s.Batches) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tally_writer_healthy", Help: "1 when the last ClickHouse INSERT succeeded."},
			stat(func(s Stats) float64 {
				if s.Healthy {
					return 1
				}
				return 0
			})),
	} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("register writer metrics: %w", err)
		}
	}
	return nil
}
