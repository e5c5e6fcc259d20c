package bench

import (
	"testing"
	"time"
)

func TestParseHostCPU(t *testing.T) {
	const tick = time.Second / 100
	tests := []struct {
		name               string
		stat               string
		idle, steal, total time.Duration
		ok                 bool
	}{
		{
			// user nice system idle iowait irq softirq steal guest guest_nice:
			// idle is idle+iowait, guest (already in user) is not summed.
			name: "ten fields", ok: true,
			stat: "cpu  100 5 20 700 10 0 5 160 40 0\ncpu0 50 2 10 350 5 0 2 80 20 0\n",
			idle: 710 * tick, steal: 160 * tick, total: 1000 * tick,
		},
		{name: "eight fields, no guest", ok: true, stat: "cpu 1 2 3 4 5 6 7 8\n",
			idle: 9 * tick, steal: 8 * tick, total: 36 * tick},
		{name: "too few fields", stat: "cpu 1 2 3 4 5 6 7\n"},
		{name: "per-core line first", stat: "cpu0 1 2 3 4 5 6 7 8\n"},
		{name: "not a number", stat: "cpu 1 2 3 x 5 6 7 8\n"},
		{name: "empty", stat: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idle, steal, total, ok := parseHostCPU(tt.stat)
			if ok != tt.ok || idle != tt.idle || steal != tt.steal || total != tt.total {
				t.Errorf("parseHostCPU = idle %v steal %v total %v ok %v, want %v %v %v %v",
					idle, steal, total, ok, tt.idle, tt.steal, tt.total, tt.ok)
			}
		})
	}
}
