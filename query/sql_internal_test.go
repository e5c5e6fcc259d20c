package query

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
)

var updateSQL = flag.Bool("update-sql", false, "rewrite testdata/sql/*.sql from the statement builders")

// goldenTables names tables as a store on database "tally" does.
type goldenTables struct{}

func (goldenTables) Table(name string) string { return "`tally`.`" + name + "`" }

// TestBuiltSQL pins the statements the builders write for each case: a
// change to a read's SQL shows in review as a change to its golden file
// (go test ./query -run TestBuiltSQL -update-sql rewrites them). Each file
// holds the statement, then its parameters, one per line.
func TestBuiltSQL(t *testing.T) {
	since := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	until := since.Add(24 * time.Hour)
	yes, no := true, false
	runList := func(f RunFilter, sort RunSort, dir SortDir, after *cursor) func() (string, []any, error) {
		return func() (string, []any, error) {
			sel, err := selectRuns(goldenTables{}, f)
			if err != nil {
				return "", nil, err
			}
			order, err := runOrder(sort, dir)
			if err != nil {
				return "", nil, err
			}
			q, args := runListSQL(goldenTables{}, sel, order, after, 51)
			return q, args, nil
		}
	}
	cases := []struct {
		name  string
		build func() (string, []any, error)
	}{
		{"runs_default", runList(RunFilter{Project: "p"}, "", "", nil)},
		{"runs_window_filters", runList(RunFilter{Project: "p", Since: since, Until: until, Agent: "planner", Model: "gpt-4o",
			Service: "svc", Task: "refund", Conversation: "c1", Tool: "search", Status: RunError, HasErrors: &yes,
			HasRecoveredErrors: &no, MinCost: 0.5, Search: "ABC"}, "", "", nil)},
		{"runs_cost_asc_after", runList(RunFilter{Project: "p", Since: since}, SortCost, Asc, &cursor{Ns: 42, Key: strings.Repeat("a", 32)})},
		{"runs_duration_desc", runList(RunFilter{Project: "p"}, SortDuration, Desc, nil)},
		{"runs_tokens", runList(RunFilter{Project: "p"}, SortTokens, "", nil)},
		{"runs_errors", runList(RunFilter{Project: "p"}, SortErrors, "", nil)},
		{"runs_matching_for_retries", func() (string, []any, error) {
			sel, err := selectRuns(goldenTables{}, RunFilter{Project: "p", Since: since, Tool: "search"})
			q, args := matchingRunsSQL(goldenTables{}, sel)
			return q, args, err
		}},
		{"runs_by_id", func() (string, []any, error) {
			q, args := runsByIDSQL(goldenTables{}, "p", clickhouse.GroupSet{Value: []any{"t1", "t2"}})
			return q, args, nil
		}},
		{"tools_aggregates", func() (string, []any, error) {
			q, args := toolAggregatesSQL(goldenTables{}, ToolFilter{Window: Window{Project: "p", Since: since, Until: until}})
			return q, args, nil
		}},
		{"tools_aggregates_one_tool", func() (string, []any, error) {
			q, args := toolAggregatesSQL(goldenTables{}, ToolFilter{Window: Window{Project: "p", Since: since, Until: until}, Tool: "search"})
			return q, args, nil
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q, args, err := c.build()
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			b.WriteString(strings.TrimSpace(q) + "\n-- parameters:\n")
			for _, a := range args {
				fmt.Fprintf(&b, "-- %T %v\n", a, a)
			}
			path := filepath.Join("testdata", "sql", c.name+".sql")
			if *updateSQL {
				if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (write it with -update-sql)", err)
			}
			if got := b.String(); got != string(want) {
				t.Errorf("%s: the built statement changed; if that is intended, run go test ./query -run TestBuiltSQL -update-sql and review the diff.\ngot:\n%s", path, got)
			}
			// One parameter per placeholder: a builder that drops or adds
			// one fails here before it fails on a server.
			if n := strings.Count(q, "?"); n != len(args) {
				t.Errorf("%d placeholders, %d parameters", n, len(args))
			}
		})
	}
}

// TestSelectRunsRefusesUnknownStatus: the builder refuses what no parser
// would give it.
func TestSelectRunsRefusesUnknownStatus(t *testing.T) {
	if _, err := selectRuns(goldenTables{}, RunFilter{Project: "p", Status: "recovered"}); err == nil {
		t.Error("status recovered: no error")
	}
}
