// Package procmem reads how a Linux process's resident memory splits:
// anonymous pages (the Go heap, the embedded engine's caches and arenas,
// what an allocator holds after freeing), file-backed pages (code of the
// binary and of libchdb.so, mapped files: the kernel can drop them under
// pressure and read them again) and shared memory. The total alone
// (VmRSS) counts the engine's code pages against tally's memory; the
// split says what is really held.
package procmem

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Resident is a process's resident memory, in bytes: Total (VmRSS) is
// Anon + File + Shmem.
type Resident struct {
	Total, Anon, File, Shmem uint64
}

// Read reads the resident memory of process pid (0: this process) from
// /proc/<pid>/status.
func Read(pid int) (Resident, error) {
	path := "/proc/self/status"
	if pid != 0 {
		path = "/proc/" + strconv.Itoa(pid) + "/status"
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return Resident{}, fmt.Errorf("read resident memory: %w", err)
	}
	var r Resident
	fields := map[string]*uint64{"VmRSS": &r.Total, "RssAnon": &r.Anon, "RssFile": &r.File, "RssShmem": &r.Shmem}
	found := 0
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		name, rest, ok := bytes.Cut(sc.Bytes(), []byte(":"))
		dst := fields[string(name)]
		if !ok || dst == nil {
			continue
		}
		value, _, _ := bytes.Cut(bytes.TrimSpace(rest), []byte(" ")) // "1234 kB"
		kib, err := strconv.ParseUint(string(value), 10, 64)
		if err != nil {
			return Resident{}, fmt.Errorf("read resident memory: %s of %s: %w", name, path, err)
		}
		*dst = kib * 1024
		found++
	}
	if found != len(fields) {
		return Resident{}, fmt.Errorf("read resident memory: %s lacks VmRSS, RssAnon, RssFile or RssShmem", path)
	}
	return r, nil
}

// Collector exports this process's resident memory by kind, as
// tally_process_resident_memory_bytes{kind="anon"|"file"|"shmem"}, read at
// each scrape; where /proc is not there, it exports nothing.
func Collector() prometheus.Collector { return collector{} }

var residentDesc = prometheus.NewDesc("tally_process_resident_memory_bytes",
	"Resident memory of the tally process by kind: anon (heap, the embedded engine's caches, memory an allocator holds), "+
		"file (code and mapped files, which the kernel can reclaim), shmem; they add up to process_resident_memory_bytes.",
	[]string{"kind"}, nil)

type collector struct{}

func (collector) Describe(ch chan<- *prometheus.Desc) { ch <- residentDesc }

func (collector) Collect(ch chan<- prometheus.Metric) {
	r, err := Read(0)
	if err != nil {
		return
	}
	for _, kv := range []struct {
		kind  string
		bytes uint64
	}{{"anon", r.Anon}, {"file", r.File}, {"shmem", r.Shmem}} {
		ch <- prometheus.MustNewConstMetric(residentDesc, prometheus.GaugeValue, float64(kv.bytes), kv.kind)
	}
}
