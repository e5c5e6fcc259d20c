package procmem_test

import (
	"os"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tallyhq/tally/support/procmem"
)

// TestReadAddsUp: this process's resident memory splits into parts that
// add up to VmRSS (the kernel's own sum), anonymous and file-backed both
// present (a Go binary has a heap and code pages); by pid, the same kinds.
func TestReadAddsUp(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Fatalf("this test reads /proc (Linux): %v", err)
	}
	for _, pid := range []int{0, os.Getpid()} {
		r, err := procmem.Read(pid)
		if err != nil {
			t.Fatal(err)
		}
		if r.Anon == 0 || r.File == 0 || r.Anon+r.File+r.Shmem != r.Total {
			t.Fatalf("pid %d: %+v: anon + file + shmem must be the total, anon and file both present", pid, r)
		}
	}
	if _, err := procmem.Read(-1); err == nil {
		t.Fatal("read of a process that cannot exist: no error")
	}
}

// TestCollector: a scrape has the three kinds, anon above zero.
func TestCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(procmem.Collector())
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(families) != 1 || families[0].GetName() != "tally_process_resident_memory_bytes" || len(families[0].GetMetric()) != 3 {
		t.Fatalf("families %v, want tally_process_resident_memory_bytes with 3 series (anon, file, shmem)", families)
	}
	for _, m := range families[0].GetMetric() {
		if m.GetLabel()[0].GetValue() == "anon" && m.GetGauge().GetValue() <= 0 {
			t.Fatalf("anon %v", m.GetGauge().GetValue())
		}
	}
}
