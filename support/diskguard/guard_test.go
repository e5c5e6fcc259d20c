package diskguard

import (
	"context"
	"errors"
	"testing"
)

// TestParseFloor: sizes in decimal and binary units, percentages, and
// what is refused.
func TestParseFloor(t *testing.T) {
	for in, want := range map[string]Floor{
		"0": {}, "1048576": {Bytes: 1 << 20}, "1GiB": {Bytes: 1 << 30}, "500MB": {Bytes: 500e6}, "2G": {Bytes: 2 << 30},
		"1.5KiB": {Bytes: 1536}, "5%": {Percent: 5}, " 10 MiB ": {Bytes: 10 << 20},
	} {
		got, err := ParseFloor(in)
		if err != nil || got != want {
			t.Errorf("ParseFloor(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "lots", "-1GiB", "100%", "-5%", "1PB"} {
		if _, err := ParseFloor(bad); err == nil {
			t.Errorf("ParseFloor(%q): no error", bad)
		}
	}
	for f, want := range map[Floor]string{{Bytes: 1 << 30}: "1GiB", {Bytes: 500e6}: "500000000B", {Bytes: 3 << 20}: "3MiB", {Percent: 5}: "5%", {}: "0B"} {
		if got := f.String(); got != want {
			t.Errorf("%+v.String() = %q, want %q", f, got, want)
		}
	}
	if got := (Floor{Percent: 10}).of(1000); got != 100 {
		t.Errorf("10%% of 1000 = %d", got)
	}
}

// TestCheck: on a real directory, no floor and a small one take writes; a
// floor above the disk's size refuses them, naming the path; a path that
// cannot be measured is left out rather than refusing.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	free, total, err := statfs(dir)
	if err != nil || total == 0 {
		t.Fatalf("statfs: %d %d %v", free, total, err)
	}
	ctx := context.Background()
	for _, f := range []Floor{{}, {Bytes: 1}, {Percent: 0.0001}} {
		if err := New(Config{Floor: f, Paths: []string{dir}}).Check(ctx); err != nil {
			t.Errorf("floor %+v: %v", f, err)
		}
	}
	g := New(Config{Floor: Floor{Bytes: total + 1}, Paths: []string{dir, dir + "/missing"}})
	err = g.Check(ctx)
	if !errors.Is(err, ErrLowDisk) || g.Err() == nil {
		t.Fatalf("floor above the disk: %v", err)
	}
	st := g.Status()
	if !st.Low || len(st.Disks) != 1 || st.Disks[0].Name != dir || !st.Disks[0].Low || st.Disks[0].Floor != total+1 {
		t.Errorf("status %+v", st)
	}
	// The server's disks count too, when it reports them.
	g = New(Config{Floor: Floor{Percent: 50}, Server: func(context.Context) (uint64, uint64, bool, error) { return 10, 100, true, nil }})
	if err := g.Check(ctx); !errors.Is(err, ErrLowDisk) {
		t.Errorf("server at 10%% free under a 50%% floor: %v", err)
	}
}

// TestReserve is issue #41's seventh defect: with a floor of 50 MB the
// drain wrote what the log held into the store and took the disk to 327
// KB free. Writes are now refused below the floor plus the room the drain
// and merges still need, at the edge: free − floor equal to the reserve
// takes writes, one byte less refuses them; no floor, no reserve.
func TestReserve(t *testing.T) {
	ctx := context.Background()
	server := func(free uint64) ServerDisk {
		return func(context.Context) (uint64, uint64, bool, error) { return free, 1000, true, nil }
	}
	reserve := func(context.Context) (uint64, error) { return 60, nil }
	for _, c := range []struct {
		name  string
		floor Floor
		free  uint64
		low   bool
	}{
		{"room for the reserve above the floor", Floor{Bytes: 100}, 160, false},
		{"a byte short of it", Floor{Bytes: 100}, 159, true},
		{"under the floor itself", Floor{Bytes: 100}, 99, true},
		{"no floor: no guard, no reserve", Floor{}, 10, false},
	} {
		g := New(Config{Floor: c.floor, Server: server(c.free), Reserve: reserve})
		err := g.Check(ctx)
		if low := errors.Is(err, ErrLowDisk); low != c.low {
			t.Errorf("%s: %v, want low %v", c.name, err, c.low)
		}
		if st := g.Status(); len(st.Disks) != 1 || (c.floor.Bytes > 0 && st.Disks[0].Reserve != 60) {
			t.Errorf("%s: status %+v", c.name, st)
		}
	}
}
