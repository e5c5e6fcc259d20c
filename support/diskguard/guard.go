// Package diskguard keeps tally from filling its disks: it measures the
// free space of the paths tally writes (its data directory: the durable
// log, alert state) and of the ClickHouse server's disks where the server
// reports them, and below a floor says so — the server then refuses
// writes with 503 and Retry-After and fails /readyz, deletes nothing, and
// takes writes again by itself once space returns.
package diskguard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ErrLowDisk is wrapped by the error of a guard below its floor.
var ErrLowDisk = errors.New("free disk space below the floor")

// Floor is the least free space allowed: Bytes, or Percent of the disk's
// size (whichever is given; both zero: no floor).
type Floor struct {
	Bytes   uint64
	Percent float64
}

// ParseFloor reads a floor: a size (500MB, 1GiB, 2G, 1048576) or a
// percentage of the disk (5%); "0" for none.
func ParseFloor(s string) (Floor, error) {
	s = strings.TrimSpace(s)
	if p, ok := strings.CutSuffix(s, "%"); ok {
		v, err := strconv.ParseFloat(p, 64)
		if err != nil || v < 0 || v >= 100 {
			return Floor{}, fmt.Errorf("disk floor %q: want a percentage from 0 to 100", s)
		}
		return Floor{Percent: v}, nil
	}
	units := []struct {
		suffix string
		mult   uint64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
		{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40}, {"B", 1}}
	mult := uint64(1)
	for _, u := range units {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(n), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 {
		return Floor{}, fmt.Errorf("disk floor %q: want a size like 1GiB or 500MB, or a percentage like 5%%", s)
	}
	return Floor{Bytes: uint64(v * float64(mult))}, nil
}

// String writes the floor as ParseFloor reads it.
func (f Floor) String() string {
	if f.Percent > 0 {
		return strconv.FormatFloat(f.Percent, 'f', -1, 64) + "%"
	}
	for _, u := range []struct {
		suffix string
		size   uint64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if f.Bytes >= u.size && f.Bytes%u.size == 0 {
			return strconv.FormatUint(f.Bytes/u.size, 10) + u.suffix
		}
	}
	return strconv.FormatUint(f.Bytes, 10) + "B"
}

// of is the floor in bytes for a disk of total bytes.
func (f Floor) of(total uint64) uint64 {
	if f.Percent > 0 {
		return uint64(f.Percent / 100 * float64(total))
	}
	return f.Bytes
}

// Disk is one measured disk: what it is, its free and total bytes.
type Disk struct {
	Name  string `json:"name"` // a path, or "clickhouse"
	Free  uint64 `json:"free_bytes"`
	Total uint64 `json:"total_bytes"`
	Floor uint64 `json:"floor_bytes"`
	// Reserve is kept free above the floor for what tally has already
	// taken (Config.Reserve): writes are refused below Floor + Reserve.
	Reserve uint64 `json:"reserve_bytes"`
	Low     bool   `json:"low"`
}

// TableUsage is one table's bytes on disk and rows.
type TableUsage struct {
	Table string `json:"table"`
	Bytes uint64 `json:"bytes"`
	Rows  uint64 `json:"rows"`
}

// ServerDisk reports the ClickHouse server's disks (schema.Store's
// ServerDisk); ok false when the server does not say.
type ServerDisk func(ctx context.Context) (free, total uint64, ok bool, err error)

// Config configures a Guard.
type Config struct {
	Floor Floor
	// Usage reports the bytes stored per table (schema.Store's DiskUsage,
	// adapted); nil: not reported.
	Usage  func(ctx context.Context) ([]TableUsage, error)
	Paths  []string   // directories tally writes
	Server ServerDisk // nil: the server's disks are not checked
	// Reserve is the room writes already taken still need on the disks:
	// what the durable log holds for the store, and the headroom a merge
	// needs (about its largest part). While a floor is set it is kept free
	// above the floor, so the drain and merges never take the disk below
	// the floor (nor to full). Nil: no reserve.
	Reserve  func(ctx context.Context) (uint64, error)
	Interval time.Duration // how often Run measures (default 10s)
	// RetryAfter is what refused writes are told to wait (default 30s).
	RetryAfter time.Duration
	Logger     *slog.Logger
}

// Guard measures free space and holds the last verdict.
type Guard struct {
	cfg Config

	mu     sync.Mutex
	disks  []Disk
	tables []TableUsage
	err    error
	at     time.Time
}

// New returns a guard; it measures nothing until Check or Run.
func New(cfg Config) *Guard {
	if cfg.Interval <= 0 {
		cfg.Interval = 10 * time.Second
	}
	if cfg.RetryAfter <= 0 {
		cfg.RetryAfter = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Guard{cfg: cfg}
}

// Check measures now and returns the verdict: nil, or an error wrapping
// ErrLowDisk naming the disks below the floor. A disk that cannot be
// measured is logged and left out, so a flaky measure never stops writes.
func (g *Guard) Check(ctx context.Context) error {
	var disks []Disk
	for _, p := range g.cfg.Paths {
		free, total, err := statfs(p)
		if err != nil {
			g.cfg.Logger.Warn("disk guard: cannot measure", "path", p, "err", err)
			continue
		}
		disks = append(disks, Disk{Name: p, Free: free, Total: total})
	}
	if g.cfg.Server != nil {
		free, total, ok, err := g.cfg.Server(ctx)
		switch {
		case err != nil:
			g.cfg.Logger.Warn("disk guard: cannot measure the ClickHouse server's disks", "err", err)
		case ok:
			disks = append(disks, Disk{Name: "clickhouse", Free: free, Total: total})
		}
	}
	var tables []TableUsage
	if g.cfg.Usage != nil {
		t, err := g.cfg.Usage(ctx)
		if err != nil {
			g.cfg.Logger.Warn("disk guard: cannot read table sizes", "err", err)
		}
		tables = t
	}
	var reserve uint64
	if g.cfg.Reserve != nil {
		r, err := g.cfg.Reserve(ctx)
		if err != nil {
			g.cfg.Logger.Warn("disk guard: cannot measure the room the drain and merges need", "err", err)
		}
		reserve = r
	}
	var low []string
	for i := range disks {
		d := &disks[i]
		d.Floor = g.cfg.Floor.of(d.Total)
		if d.Floor == 0 {
			continue
		}
		d.Reserve = reserve
		switch {
		case d.Free < d.Floor:
			d.Low = true
			low = append(low, fmt.Sprintf("%s has %d bytes free, under the floor of %d", d.Name, d.Free, d.Floor))
		case d.Free-d.Floor < d.Reserve:
			d.Low = true
			low = append(low, fmt.Sprintf("%s has %d bytes free, under the floor of %d plus the %d bytes the drain and merges still need",
				d.Name, d.Free, d.Floor, d.Reserve))
		}
	}
	var err error
	if len(low) > 0 {
		err = fmt.Errorf("%w (%s): tally refuses writes until space returns; nothing unexpired is deleted", ErrLowDisk, strings.Join(low, "; "))
	}
	g.mu.Lock()
	was := g.err
	g.disks, g.tables, g.err, g.at = disks, tables, err, time.Now()
	g.mu.Unlock()
	switch {
	case err != nil && was == nil:
		g.cfg.Logger.Error("disk guard: refusing writes", "err", err)
	case err == nil && was != nil:
		g.cfg.Logger.Info("disk guard: space returned, taking writes again")
	}
	return err
}

// Err is the last verdict: nil, or an error wrapping ErrLowDisk.
func (g *Guard) Err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

// RetryAfter is what refused writes are told to wait.
func (g *Guard) RetryAfter() time.Duration { return g.cfg.RetryAfter }

// Status is the guard's last measure.
type Status struct {
	Floor      string       `json:"floor"`
	MeasuredAt time.Time    `json:"measured_at,omitzero"`
	Low        bool         `json:"low"`
	Error      string       `json:"error,omitempty"`
	Disks      []Disk       `json:"disks"`
	Tables     []TableUsage `json:"tables"`
}

// Status reports the last measure.
func (g *Guard) Status() Status {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := Status{Floor: g.cfg.Floor.String(), MeasuredAt: g.at, Low: g.err != nil, Disks: append([]Disk{}, g.disks...),
		Tables: append([]TableUsage{}, g.tables...)}
	if g.err != nil {
		st.Error = g.err.Error()
	}
	return st
}

// Run measures at once and every interval until ctx ends.
func (g *Guard) Run(ctx context.Context) {
	for {
		_ = g.Check(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(g.cfg.Interval):
		}
	}
}

// Collector exports the last measure on /metrics: tally_disk_free_bytes,
// tally_disk_total_bytes and tally_disk_floor_bytes by disk,
// tally_disk_low (1 while writes are refused) and tally_table_disk_bytes
// by table.
func (g *Guard) Collector() prometheus.Collector { return collector{g} }

type collector struct{ g *Guard }

var (
	freeDesc  = prometheus.NewDesc("tally_disk_free_bytes", "Free bytes of the disks tally and ClickHouse write, at the last measure.", []string{"disk"}, nil)
	totalDesc = prometheus.NewDesc("tally_disk_total_bytes", "Size of the disks tally and ClickHouse write.", []string{"disk"}, nil)
	floorDesc = prometheus.NewDesc("tally_disk_floor_bytes", "The free-space floor (--disk-floor) of each disk: below it tally refuses writes.", []string{"disk"}, nil)
	lowDesc   = prometheus.NewDesc("tally_disk_low", "1 while a disk is below its floor and tally refuses writes, else 0.", nil, nil)
	tableDesc = prometheus.NewDesc("tally_table_disk_bytes", "Bytes on disk of each ClickHouse table of tally's database.", []string{"table"}, nil)
)

// Describe sends the descriptors.
func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{freeDesc, totalDesc, floorDesc, lowDesc, tableDesc} {
		ch <- d
	}
}

// Collect sends the last measure.
func (c collector) Collect(ch chan<- prometheus.Metric) {
	st := c.g.Status()
	for _, d := range st.Disks {
		ch <- prometheus.MustNewConstMetric(freeDesc, prometheus.GaugeValue, float64(d.Free), d.Name)
		ch <- prometheus.MustNewConstMetric(totalDesc, prometheus.GaugeValue, float64(d.Total), d.Name)
		ch <- prometheus.MustNewConstMetric(floorDesc, prometheus.GaugeValue, float64(d.Floor), d.Name)
	}
	low := 0.0
	if st.Low {
		low = 1
	}
	ch <- prometheus.MustNewConstMetric(lowDesc, prometheus.GaugeValue, low)
	for _, t := range st.Tables {
		ch <- prometheus.MustNewConstMetric(tableDesc, prometheus.GaugeValue, float64(t.Bytes), t.Table)
	}
}
