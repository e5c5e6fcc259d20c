package query_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/schema"
)

// TestSettledReadKeepsTheNewestVersion: the reports read every version of
// a settled row (no FINAL) and keep the newest of each key, so an older
// version never stands in for the current one, even when only the older
// one matches the filter, and a tombstone hides its run. Run A was settled
// under task "old", then again under "new"; run B was settled, then
// tombstoned (its start moved); run C has one version, task "old".
func TestSettledReadKeepsTheNewestVersion(t *testing.T) {
	store := openStore(t)
	ctx := context.Background()
	start := time.Now().UTC().Add(-72 * time.Hour).Truncate(time.Second)
	row := func(id, task string, version uint64, deleted uint8) schema.RunRow {
		return schema.RunRow{Project: "p", TraceID: strings.Repeat(id, 32), Start: start, StartNs: uint64(start.UnixNano()) + 500,
			EndNs: uint64(start.UnixNano()) + 2e9, Name: task, Task: task, Spans: 3, LLMCalls: 1, Version: version, Deleted: deleted}
	}
	// Each version in an INSERT of its own: separate parts, as the settler
	// writes them, which only FINAL or a merge would collapse.
	for _, r := range []schema.RunRow{row("a", "old", 1, 0), row("b", "old", 1, 0), row("c", "old", 1, 0), row("a", "new", 2, 0), row("b", "", 2, 1)} {
		if err := store.InsertRuns(ctx, []schema.RunRow{r}); err != nil {
			t.Fatal(err)
		}
	}
	// The run table is complete through now: no run is live.
	now := uint64(time.Now().UnixNano())
	if err := store.InsertRunMark(ctx, schema.RunMarkRow{Name: schema.RunMarkSettled, Value: now, Version: now}); err != nil {
		t.Fatal(err)
	}
	r := query.NewReader(store)
	window := query.TaskFilter{Project: "p", Since: start.Add(-time.Hour), Until: start.Add(time.Hour)}
	for _, c := range []struct {
		task string
		want map[string]int // task → runs
	}{
		{"", map[string]int{"new": 1, "old": 1}},
		{"old", map[string]int{"old": 1}},
		{"new", map[string]int{"new": 1}},
	} {
		f := window
		f.Task = c.task
		rep, err := r.Tasks(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for _, task := range rep.Tasks {
			got[task.Key] = task.Runs
		}
		if len(got) != len(c.want) || rep.RunsRead != sumRuns(c.want) {
			t.Errorf("task filter %q: %v (%d runs read), want %v", c.task, got, rep.RunsRead, c.want)
			continue
		}
		for k, n := range c.want {
			if got[k] != n {
				t.Errorf("task filter %q: %v, want %v", c.task, got, c.want)
			}
		}
	}
}

func sumRuns(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
