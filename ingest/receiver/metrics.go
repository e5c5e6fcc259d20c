package receiver

import (
	"fmt"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the receiver's Prometheus metrics. A nil *Metrics records
// nothing, so metrics are optional.
type Metrics struct {
	requests      *prometheus.CounterVec
	spansAccepted prometheus.Counter
	spansRejected prometheus.Counter
	spansRefused  prometheus.Counter
	wireBytes     prometheus.Counter
	decodedBytes  prometheus.Counter
	inFlightBytes prometheus.Gauge
}

// NewMetrics creates the receiver's metrics and registers them on reg (when
// reg is not nil).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tally_receiver_requests_total",
			Help: "OTLP/HTTP export requests answered, by HTTP status code.",
		}, []string{"code"}),
		spansAccepted: counter("tally_receiver_spans_accepted_total",
			"Spans accepted durably by the sink."),
		spansRejected: counter("tally_receiver_spans_rejected_total",
			"Spans dropped as invalid and reported through partial_success."),
		spansRefused: counter("tally_receiver_spans_refused_total",
			"Spans of decoded requests refused as a whole (too many spans, sink busy or failing); the client keeps them."),
		wireBytes: counter("tally_receiver_received_bytes_total",
			"Request body bytes read from the network (compressed when gzipped)."),
		decodedBytes: counter("tally_receiver_decompressed_bytes_total",
			"Request body bytes read after decompression."),
		inFlightBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tally_receiver_in_flight_bytes",
			Help: "Request body bytes reserved by the requests being served.",
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.requests, m.spansAccepted, m.spansRejected, m.spansRefused,
		m.wireBytes, m.decodedBytes, m.inFlightBytes} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register receiver metrics: %w", err)
		}
	}
	return m, nil
}

func (m *Metrics) request(status int) {
	if m != nil {
		m.requests.WithLabelValues(strconv.Itoa(status)).Inc()
	}
}

func (m *Metrics) spans(accepted, rejected int) {
	if m != nil {
		m.spansAccepted.Add(float64(accepted))
		m.spansRejected.Add(float64(rejected))
	}
}

func (m *Metrics) refused(spans int) {
	if m != nil {
		m.spansRefused.Add(float64(spans))
	}
}

func (m *Metrics) read(wire, decoded int64) {
	if m != nil {
		m.wireBytes.Add(float64(wire))
		m.decodedBytes.Add(float64(decoded))
	}
}

func (m *Metrics) inFlight(delta int64) {
	if m != nil {
		m.inFlightBytes.Add(float64(delta))
	}
}
