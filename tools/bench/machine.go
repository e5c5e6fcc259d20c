package bench

import (
	"bufio"
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/tallyhq/tally/schema"
)

// Machine describes where the figures were measured.
type Machine struct {
	Cores             int    `json:"cores"`
	MemoryMiB         int    `json:"memory_mib"`
	CPUModel          string `json:"cpu_model"`
	OS                string `json:"os"`
	GoVersion         string `json:"go_version"`
	ClickHouseVersion string `json:"clickhouse_version"`
	// EmbeddedVersion is the embedded engine's ClickHouse version and the
	// library it was loaded from ("" when the embedded store was not run).
	EmbeddedVersion string `json:"embedded_version,omitempty"`
	LoadAverage     string `json:"load_average_at_start"` // the machine is shared: others' load shows here
}

// DescribeMachine reads the machine's cores, memory and CPU model from
// /proc, and the ClickHouse version from the store ("" without one).
func DescribeMachine(ctx context.Context, store *schema.Store) Machine {
	m := Machine{Cores: runtime.NumCPU(), OS: runtime.GOOS + "/" + runtime.GOARCH, GoVersion: runtime.Version()}
	if kb := procField("/proc/meminfo", "MemTotal"); kb != "" {
		if n, err := strconv.Atoi(strings.Fields(kb)[0]); err == nil {
			m.MemoryMiB = n / 1024
		}
	}
	m.CPUModel = procField("/proc/cpuinfo", "model name")
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			m.LoadAverage = strings.Join(f[:3], " ")
		}
	}
	if store != nil {
		m.ClickHouseVersion = store.Capabilities().Version
	}
	return m
}

// procField is the value of the first "key: value" line of a /proc file.
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// procStatusKiB is a "VmHWM:  1234 kB"-style field of /proc/PID/status in KiB.
func procStatusKiB(pid int, key string) (uint64, bool) {
	v := procField("/proc/"+strconv.Itoa(pid)+"/status", key)
	f := strings.Fields(v)
	if len(f) == 0 {
		return 0, false
	}
	n, err := strconv.ParseUint(f[0], 10, 64)
	return n, err == nil
}

// procCPU is the CPU time process pid has used, user and system
// (/proc/PID/stat's utime and stime, in the kernel's USER_HZ of 100 a
// second); false when it cannot be read.
func procCPU(pid int) (time.Duration, bool) {
	if pid <= 0 {
		return 0, false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name, field 2, is in parentheses and may hold spaces:
	// the fields counted from 3 start after its last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseUint(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * (time.Second / 100), true
}

// hostCPU is the machine's CPU time so far, all cores together, from the
// first line of /proc/stat (in USER_HZ): idle (idle and iowait), stolen
// (steal: time the hypervisor gave this machine's virtual cores to others)
// and the total of every state; false when it cannot be read.
func hostCPU() (idle, steal, total time.Duration, ok bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, 0, false
	}
	return parseHostCPU(string(b))
}

// parseHostCPU is hostCPU reading the text of /proc/stat.
func parseHostCPU(stat string) (idle, steal, total time.Duration, ok bool) {
	line, _, _ := strings.Cut(stat, "\n")
	f := strings.Fields(line)
	// cpu user nice system idle iowait irq softirq steal [guest guest_nice]:
	// guest time is already counted in user, so it is left out of the total.
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, 0, false
	}
	var v [8]uint64
	for i := range v {
		var err error
		if v[i], err = strconv.ParseUint(f[i+1], 10, 64); err != nil {
			return 0, 0, 0, false
		}
	}
	tick := func(n uint64) time.Duration { return time.Duration(n) * (time.Second / 100) }
	var sum uint64
	for _, n := range v {
		sum += n
	}
	return tick(v[3] + v[4]), tick(v[7]), tick(sum), true
}
