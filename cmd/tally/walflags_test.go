package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tallyhq/tally/internal/testenv"
)

// TestServeRefusesBadCommitBounds: a stream bound of 0 would commit
// never or always by accident; serve refuses it before it listens.
func TestServeRefusesBadCommitBounds(t *testing.T) {
	ch := testenv.ClickHouse(t)
	db := ch.NewDatabase(t)
	for _, bad := range [][]string{
		{"--wal-commit-spans", "0"},
		{"--wal-commit-bytes", "0"},
		{"--wal-commit-bytes", "-1"},
		{"--wal-commit-interval", "0s"},
		{"--wal-stream-batch-bytes", "0"},
	} {
		args := append([]string{"serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(),
			"--clickhouse-addr", ch.Addr, "--clickhouse-database", db, "--config", ""}, bad...)
		out, err := tallyCLI(t, args...)
		const want = "--wal-commit-spans, --wal-commit-bytes and --wal-stream-batch-bytes must be ≥ 1, --wal-commit-interval > 0"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("serve %v: %v, want %q\n%s", bad, err, want, out)
		}
	}
	// A stream must commit within the 30 s INSERT timeout: an interval of
	// more than half of it is refused.
	args := []string{"serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(),
		"--clickhouse-addr", ch.Addr, "--clickhouse-database", db, "--config", "", "--wal-commit-interval", "15001ms"}
	out, err := tallyCLI(t, args...)
	const want = "commit interval 15.001s: must be at most half the INSERT timeout (15s)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("serve --wal-commit-interval 15001ms: %v, want %q\n%s", err, want, out)
	}
}

// TestServeRefusesBadGCPercent: a growth of 0 collects without pause, and
// the collector turned off without a memory limit lets the heap grow
// without bound; serve refuses both before it listens.
func TestServeRefusesBadGCPercent(t *testing.T) {
	// GOGC, when set, wins over the flag: this test needs it unset.
	t.Setenv("GOGC", "")
	os.Unsetenv("GOGC") //nolint:errcheck // restored by t.Setenv's cleanup
	for _, bad := range [][]string{
		{"--gc-percent", "0"},
		{"--gc-percent", "-1", "--memory-limit", "0"},
	} {
		args := append([]string{"serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--config", ""}, bad...)
		out, err := tallyCLI(t, args...)
		want := "--gc-percent " + bad[1] + ": must be ≥ 1, or negative (collector off) only with a --memory-limit"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("serve %v: %v, want %q\n%s", bad, err, want, out)
		}
	}
}

// TestServeRefusesNoBackgroundLoads: with --background-loads 0 the
// settler, the rollup and the review of runs in flight would never get a
// turn to load; serve refuses it before it opens the store. 1 is the
// default, taken by every other serve test.
func TestServeRefusesNoBackgroundLoads(t *testing.T) {
	for _, bad := range []string{"0", "-1"} {
		args := []string{"serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--config", "", "--background-loads", bad}
		out, err := tallyCLI(t, args...)
		want := "--background-loads " + bad + ": want at least 1"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("serve --background-loads %s: %v, want %q\n%s", bad, err, want, out)
		}
	}
}

// TestServeRefusesNegativeWindowExactRuns: the tasks and caps reports'
// bound of runs read one by one is 0 (the rollup for any whole hour) or
// more; -1 is refused before serve opens the store.
func TestServeRefusesNegativeWindowExactRuns(t *testing.T) {
	args := []string{"serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--config", "", "--window-exact-runs", "-1"}
	out, err := tallyCLI(t, args...)
	if want := "--window-exact-runs -1: want 0 or more"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("serve --window-exact-runs -1: %v, want %q\n%s", err, want, out)
	}
}

// TestServeRefusesBadDeadLetterBounds: zero refusals would dead-letter a
// record at its first failure, and a stuck-after of 0 would report every
// failed write as a stuck drain; serve refuses both before it listens.
func TestServeRefusesBadDeadLetterBounds(t *testing.T) {
	ch := testenv.ClickHouse(t)
	db := ch.NewDatabase(t)
	for _, bad := range [][]string{{"--wal-dead-letter-attempts", "0"}, {"--wal-stuck-after", "0s"}} {
		args := append([]string{"serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(),
			"--clickhouse-addr", ch.Addr, "--clickhouse-database", db, "--config", ""}, bad...)
		out, err := tallyCLI(t, args...)
		const want = "--wal-dead-letter-attempts must be ≥ 1, --wal-stuck-after > 0"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("serve %v: %v, want %q\n%s", bad, err, want, out)
		}
	}
}

// TestSpanAgeFromRetention: --max-span-age follows the longest span
// retention, a project's included, and is no bound when spans are kept
// forever.
func TestSpanAgeFromRetention(t *testing.T) {
	day := 24 * time.Hour
	for _, c := range []struct {
		retention time.Duration
		projects  []string
		want      time.Duration
	}{
		{30 * day, nil, 30 * day},
		{30 * day, []string{"audit=spans:90d,content:7d", "scratch=2d"}, 90 * day},
		{30 * day, []string{"notes=content:1d"}, 30 * day}, // spans as long as --retention
		{0, []string{"scratch=2d"}, 0},
	} {
		got, err := spanAgeFromRetention(storageConfig{Retention: c.retention, ProjectRetention: c.projects})
		if err != nil || got != c.want {
			t.Errorf("retention %s, projects %v: %s, %v; want %s", c.retention, c.projects, got, err, c.want)
		}
	}
}

// TestContentRetentionFollowsShorterRetention is issue #36's defect:
// `tally serve --retention 2d` refused to start because the default
// content retention (7 d) is longer. A default follows the limit the user
// set; an explicit conflict is still refused (by the policy).
func TestContentRetentionFollowsShorterRetention(t *testing.T) {
	day := 24 * time.Hour
	for _, c := range []struct {
		spans, content time.Duration
		set            bool
		want           time.Duration
	}{
		{2 * day, 7 * day, false, 2 * day},  // the default follows --retention 2d
		{30 * day, 7 * day, false, 7 * day}, // the default under a longer retention
		{0, 7 * day, false, 7 * day},        // spans forever: the default stands
		{2 * day, 7 * day, true, 7 * day},   // given: kept, and refused by the policy
		{2 * day, 1 * day, true, 1 * day},
	} {
		if got := contentRetention(storageConfig{Retention: c.spans, ContentRetention: c.content, ContentRetentionSet: c.set}); got != c.want {
			t.Errorf("retention %s, content %s (given %v): %s, want %s", c.spans, c.content, c.set, got, c.want)
		}
	}
	// End to end: serve with --retention 2d starts (it stops at the first
	// bad flag after it otherwise, so a refused start would say so here).
	ch := testenv.ClickHouse(t)
	out, err := tallyCLI(t, "serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--config", "", "--retention", "2d",
		"--clickhouse-addr", ch.Addr, "--clickhouse-database", ch.NewDatabase(t), "--wal-dead-letter-attempts", "0")
	if err == nil || strings.Contains(err.Error(), "content-retention") || !strings.Contains(err.Error(), "--wal-dead-letter-attempts") {
		t.Errorf("serve --retention 2d: %v\n%s", err, out)
	}
}
