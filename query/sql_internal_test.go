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

	"github.com/tallyhq/tally/schema"
)

var updateSQL = flag.Bool("update-sql", false, "rewrite testdata/sql/*.sql from the statement builders")

// goldenTables names tables as a store on database "tally" does.
type goldenTables struct{}

func (goldenTables) Table(name string) string { return "`tally`.`" + name + "`" }

// TestBuiltSQL pins the statements the builders write for each case: a
// change to a read's SQL shows in review as a change to its golden file
// (go test ./query -run TestBuiltSQL -update-sql rewrites them). Each file
// holds the statement, then its parameters, one per line. Every read of
// the package builds its statement in such a builder (xxxSQL, next to the
// function that runs it), and each builder has a case here; a builder
// with optional parts has one case with them and one without.
func TestBuiltSQL(t *testing.T) {
	since := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	until := since.Add(24 * time.Hour)
	yes, no := true, false
	gt := goldenTables{}
	win := Window{Project: "p", Since: since, Until: until}
	ids := []string{"T1", "t2"} // traceSet lowercases them
	set := clickhouse.GroupSet{Value: []any{"t1", "t2"}}
	pairs := clickhouse.GroupSet{Value: []any{clickhouse.GroupSet{Value: []any{"t1", "s1"}}, clickhouse.GroupSet{Value: []any{"t2", "s2"}}}}
	ext := runExtent{lo: since, hi: since.Add(time.Hour), rows: 120}
	// A keys window from 01:30 to 23:30: hours 01:00–23:00 (and 23:00–
	// 24:00), of which 05:00 and 06:00 are not indexed; 09:00 and 19:00
	// were indexed last.
	first, end := keyWindowHours(since.Add(90*time.Minute), until.Add(-30*time.Minute))
	marks := map[time.Time]schema.SearchKeyHour{}
	for h := first; h.Before(end); h = h.Add(time.Hour) {
		if h.Hour() != 5 && h.Hour() != 6 {
			marks[h] = schema.SearchKeyHour{Hour: h, Version: 1764892800000000000 + uint64(h.Hour())%10}
		}
	}
	var keyWindow struct{ index, live sqlExpr }
	keyWindow.index, keyWindow.live = keyWindowSQL(first, end, marks)
	var keyWindowNoMarks struct{ index, live sqlExpr }
	keyWindowNoMarks.index, keyWindowNoMarks.live = keyWindowSQL(first, end, nil)
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
		{"runs_settled_window_filters", func() (string, []any, error) {
			sel, err := selectRuns(goldenTables{}, RunFilter{Project: "p", Since: since, Until: until, Agent: "planner", Model: "gpt-4o",
				Service: "svc", Task: "refund", Conversation: "c1", Tool: "search", Status: RunError, HasErrors: &yes,
				HasRecoveredErrors: &no, MinCost: 0.5, Search: "ABC"})
			q, args := settledPageSQL(goldenTables{}, "p", sel, runListOrder{sort: SortStart, desc: true}, nil, 51, liveSet{ids: ids}, true, nil)
			return q, args, err
		}},
		{"runs_settled_cases", built(settledCasesSQL(gt, "p", []uint32{1796083200, 1796083260}, ids))},
		{"runs_settled_rows", built(settledRowsSQL(gt, "p", []uint32{1796083200, 1796083200, 1796083260}, ids))},
		{"runs_settled_retries_after", func() (string, []any, error) {
			sel, err := selectRuns(goldenTables{}, RunFilter{Project: "p"})
			live, largs := liveRunsSQL(goldenTables{}, "p", time.Time{}, until, 1234)
			q, args := settledPageSQL(goldenTables{}, "p", sel, runListOrder{sort: SortRetries}, &cursor{Ns: 3, Key: strings.Repeat("a", 32)}, 102,
				liveSet{sub: live, subArgs: largs}, false, nil)
			return q, args, err
		}},
		{"runs_settled_bound_after", func() (string, []any, error) {
			sel, err := selectRuns(goldenTables{}, RunFilter{Project: "p", Since: since, Agent: "planner", Search: "ABC"})
			q, args := settledBoundSQL(goldenTables{}, "p", sel, runListOrder{sort: SortCost, desc: true}, &cursor{Ns: 3, Key: strings.Repeat("a", 32)}, 102)
			return q, args, err
		}},
		{"runs_settled_within_bound", func() (string, []any, error) {
			sel, err := selectRuns(goldenTables{}, RunFilter{Project: "p", Since: since})
			bound := uint64(1796083260500000000)
			q, args := settledPageSQL(goldenTables{}, "p", sel, runListOrder{sort: SortStart, desc: true}, nil, 102, liveSet{ids: ids}, false, &bound)
			return q, args, err
		}},
		{"runs_settled_facts", func() (string, []any, error) {
			sel, err := selectRuns(goldenTables{}, RunFilter{Project: "p", Since: since, Until: until, Task: "refund"})
			q, args := settledFactsSQL(goldenTables{}, "p", sel, facts{config: true, outcomes: true}, liveSet{})
			return q, args, err
		}},
		{"runs_settled_facts_lean", func() (string, []any, error) {
			sel, err := selectRuns(goldenTables{}, RunFilter{Project: "p", Since: since, Until: until})
			q, args := settledFactsSQL(goldenTables{}, "p", sel, facts{fingerprint: true, outcomes: true, noAgents: true, noCounts: true, noRetries: true}, liveSet{})
			return q, args, err
		}},
		{"runs_settled_configs", func() (string, []any, error) {
			sel, err := selectRuns(goldenTables{}, RunFilter{Project: "p", Since: since, Until: until})
			q, args := settledConfigsSQL(goldenTables{}, "p", sel)
			return q, args, err
		}},
		{"runs_live", built(liveRunsSQL(gt, "p", since, until, 1234))},
		{"outcomes_posted_in_window", built(postedInWindowSQL(gt, "p", since, until))},
		{"runs_live_by_id", func() (string, []any, error) {
			sel, err := selectRuns(goldenTables{}, RunFilter{Project: "p", Since: since, Agent: "planner", Search: "ABC"})
			q, args := runListSQL(goldenTables{}, liveSet{ids: ids}.narrow(sel), runListOrder{sort: SortStart, desc: true}, nil, 51)
			return q, args, err
		}},
		{"runs_live_by_subquery", func() (string, []any, error) {
			sel, err := selectRuns(goldenTables{}, RunFilter{Project: "p", Since: since, Agent: "planner", Search: "ABC"})
			live, largs := liveRunsSQL(goldenTables{}, "p", since, until, 1234)
			q, args := runListSQL(goldenTables{}, liveSet{sub: live, subArgs: largs}.narrow(sel), runListOrder{sort: SortStart, desc: true}, nil, 51)
			return q, args, err
		}},
		{"runs_matching_for_retries", func() (string, []any, error) {
			sel, err := selectRuns(goldenTables{}, RunFilter{Project: "p", Since: since, Tool: "search"})
			q, args := matchingRunsSQL(goldenTables{}, sel)
			return q, args, err
		}},
		{"runs_by_id", func() (string, []any, error) {
			q, args := runsByIDSQL(goldenTables{}, "p", clickhouse.GroupSet{Value: []any{"t1", "t2"}})
			return q, args, nil
		}},
		// tools.go
		{"tools_calls", built(toolCallsSQL(gt, win))},
		{"tools_percentiles", built(toolPercentilesSQL(gt, ToolFilter{Window: win}))},
		{"tools_percentiles_one_tool", built(toolPercentilesSQL(gt, ToolFilter{Window: win, Tool: "search"}))},
		{"tools_classify_window", built(classifyWindowSQL(gt, win, Shard{}))},
		{"tools_classify_window_part", built(classifyWindowSQL(gt, win, Shard{Index: 2, Of: 3}))},
		{"tools_classify_window_range", built(classifyWindowSQL(gt, win, Shard{Lo: "3f0", Hi: "a17"}))},
		{"tools_window_prefixes", func() (string, []any, error) {
			where, args := win.where()
			q, args := prefixCountsSQL(gt, where+" AND span_type = 'tool'", args)
			return q, args, nil
		}},
		{"tools_window_rows", built(windowToolRowsSQL(gt, win))},
		{"models_latency", built(modelLatencySQL(gt, win))},
		{"runs_over_budget", built(runsOverBudgetSQL(gt, win, 2.5, 10))},
		{"tools_repeat_loops", built(repeatLoopsSQL(gt, win, 3, 20))},
		{"usage_by_minute", built(usageByMinuteSQL(gt, win))},
		{"projects", built(projectsSQL(gt, since))},
		// retries.go
		{"runs_retries", built(runRetriesSQL(gt, "p", "trace_id IN ? AND start >= ? AND start <= ?", []any{set, since, until}))},
		// review.go
		{"review_settled_tasks", func() (string, []any, error) {
			sel, err := selectRuns(gt, RunFilter{Project: "p", Since: since, Until: until, Agent: "planner"})
			q, args := settledTasksSQL(gt, "p", sel, liveSet{ids: []string{"t1"}})
			return q, args, err
		}},
		{"review_settled_steps_of_tool", func() (string, []any, error) {
			sel, err := selectRuns(gt, RunFilter{Project: "p", Since: since})
			q, args := settledStepsSQL(gt, "p", sel, liveSet{}, "fetch_url")
			return q, args, err
		}},
		{"review_settled_signals", func() (string, []any, error) {
			sel, err := selectRuns(gt, RunFilter{Project: "p", Since: since, Task: "triage"})
			q, args := settledSignalsSQL(gt, "p", sel, liveSet{ids: []string{"t1", "t2"}})
			return q, args, err
		}},
		{"review_flagged_rows", built(flaggedRowsSQL(gt, SignalFilter{Project: "p"}, []hourVersion{{since, 3}, {since.Add(2 * time.Hour), 4}}))},
		{"review_flagged_rows_task_agent", built(flaggedRowsSQL(gt, SignalFilter{Project: "p", Task: "t", Agent: "a"}, []hourVersion{{since, 3}}))},
		{"review_spans", built(reviewSpansSQL(gt, "p", ids, since, until))},
		{"review_content", built(reviewContentSQL(gt, "p", ids, since, until, false))},
		{"review_content_latest", built(reviewContentSQL(gt, "p", ids[:1], since, until, true))},
		{"review_definitions", built(reviewDefinitionsSQL(gt, "p", ids, since, until))},
		{"review_approvals", built(runApprovalsSQL(gt, "p", ids, since, until))},
		// content.go and fixture.go
		{"content_of_span", built(spanContentSQL(gt, "p", "T1", "S1"))},
		{"content_missing_spans", built(missingSpansSQL(gt, "p", "T1", []string{"s1", "s2"}))},
		{"content_run_exists", built(runExistsSQL(gt, "p", "T1"))},
		{"content_chats_content", built(spanChatsContentSQL(gt, "p", pairs))},
		{"content_chats_spans", built(spanChatsSpansSQL(gt, "p", pairs))},
		{"content_of_run", built(contentsSQL(gt, "p", "T1"))},
		// lookup.go
		{"trace_ids_with_prefix", built(traceIDsWithPrefixSQL(gt, "p", "ab12", 10))},
		// spans.go, treepart.go, rundetail.go
		{"spans_locate", built(locateSQL(gt, "p", "T1"))},
		{"spans_extent", built(readExtentSQL(gt, "p", "t1", schema.SpanSelectList(), ext, 0, false))},
		{"spans_extent_latest", built(readExtentSQL(gt, "p", "t1", schema.SpanSelectList(), ext, 0, true))},
		{"spans_extent_limit", built(readExtentSQL(gt, "p", "t1", schema.SpanOutline(reviewOutline()).List(), ext, 101, false))},
		{"spans_extent_unpacked", built(readExtentSQL(gt, "p", "t1", schema.SpanColumnsAll().Unpacked().List(), ext, 0, false))},
		{"spans_wide", built(fillWideSQL(gt, "p", "T1", clickhouse.GroupSet{Value: []any{"s1", "s2"}}, ext))},
		{"run_summary_whole", built(summarizeWholeSQL(gt, "p", "T1", since))},
		// settledtree.go
		{"settled_tree", built(settledTreeSQL(gt, "p", "T1", ext))},
		// cache.go
		{"cache_prefixes", built(cachePrefixesSQL(gt, win, ""))},
		{"cache_prefixes_one_model", built(cachePrefixesSQL(gt, win, "gpt-4o"))},
		{"cache_call_rows", built(cacheCallRowsSQL(gt, win, CacheFilter{}, []uint64{11, 12}, []uint64{1024, 2048}))},
		{"cache_call_rows_filtered", built(cacheCallRowsSQL(gt, win, CacheFilter{Model: "gpt-4o", Agent: "planner"}, []uint64{11}, []uint64{1024}))},
		{"cache_tasks", built(fillTasksSQL(gt, "p", set, since, until))},
		// rollupreads.go
		{"rollup_span_fingerprints", built(spanFingerprintsSQL(gt, since, until, 0))},
		{"search_key_fingerprints", built(spanFingerprintsSQL(gt, since, until, 1764892800000000000))},
		// settle.go
		{"settle_stale_runs", built(staleRunsSQL(gt, since, until, 0, 77))},
		{"settle_stale_runs_after_mark", built(staleRunsSQL(gt, since, until, 1234, 77))},
		{"settle_mark", built(settledMarkSQL(gt))},
		{"settle_span_days", built(spanDaysSQL(gt, since, until))},
		{"settle_spans", built(settleSpansSQL(gt, "p", ids, since, until))},
		{"settle_extent", built(settleExtentSQL(gt, "p", ids))},
		{"rollup_fingerprints", built(rollupFingerprintsSQL(gt, since, until))},
		{"rollup_keys", built(rollupKeysSQL(gt, since, until))},
		{"rollup_span_rows", built(spanRowsSQL(gt, "", since, until))},
		{"rollup_span_rows_project", built(spanRowsSQL(gt, "p", since, until))},
		// costs.go
		{"costs_rolled_hours", built(rolledHoursSQL(gt, since, until))},
		{"costs_read_rollup", built(readRollupSQL(gt, "p", []time.Time{since, since.Add(time.Hour), since.Add(3 * time.Hour), since.Add(6 * time.Hour)},
			view{grain: schema.GrainModel, dims: []string{"provider", "model"}}, true, "", "", nil))},
		{"costs_read_rollup_unpriced", built(readRollupSQL(gt, "p", []time.Time{since, since.Add(time.Hour)}, unmatchedView, false, "", "", nil))},
		{"costs_read_rollup_costs", built(readRollupCostsSQL(gt, "p", []time.Time{since, since.Add(time.Hour)}, view{grain: schema.GrainConversation, dims: []string{"conversation_id"}}))},
		{"costs_read_rollup_keys", built(readRollupKeysSQL(gt, "p", []time.Time{since, since.Add(time.Hour)}, view{grain: schema.GrainConversation, dims: []string{"conversation_id"}}, []string{"c1", "c2"}, true))},
		{"costs_read_rollup_others", built(readRollupKeysSQL(gt, "p", []time.Time{since, since.Add(time.Hour)}, view{grain: schema.GrainConversation, dims: []string{"conversation_id"}}, []string{"c1", "c2"}, false))},
		// openhour.go
		{"costs_open_run_keys", built(openRunKeysSQL(gt, "p", since.Truncate(time.Hour)))},
		{"costs_open_runs", built(loadOpenRunsSQL(gt, "p", []string{"t1", "t2"}, since, until))},
		// attributed.go
		{"spans_attributed", built(loadSpansShardSQL(gt, "", since, until, DefaultTraceWindow, Shard{}))},
		{"spans_attributed_project_shard", built(loadSpansShardSQL(gt, "p", since, until, DefaultTraceWindow, Shard{Index: 1, Of: 4}))},
		{"spans_attributed_range", built(loadSpansShardSQL(gt, "p", since, until, DefaultTraceWindow, Shard{Lo: "3f0", Hi: "a17"}))},
		{"spans_prefix_counts", func() (string, []any, error) {
			q, args := prefixCountsSQL(gt, "start >= ? AND start < ?", []any{since, until})
			return q, args, nil
		}},
		{"spans_attributed_runs", built(loadRunSpansSQL(gt, "p", []string{"t1", "t2"}, since, until, DefaultTraceWindow))},
		// conversations.go
		{"conversations_page_all_live", func() (string, []any, error) {
			runs, args, err := conversationRunsSQL(gt, ConversationFilter{Project: "p"}, liveSet{all: true})
			q, args := conversationPageSQL(runs, args, 50, nil)
			return q, args, err
		}},
		{"conversations_page_settled", func() (string, []any, error) {
			runs, args, err := conversationRunsSQL(gt, ConversationFilter{Project: "p"}, liveSet{})
			q, args := conversationPageSQL(runs, args, 50, nil)
			return q, args, err
		}},
		{"conversations_page_window_after", func() (string, []any, error) {
			runs, args, err := conversationRunsSQL(gt, ConversationFilter{Project: "p", Since: since, Until: until}, liveSet{ids: []string{"t1", "t2"}})
			q, args := conversationPageSQL(runs, args, 20, &cursor{Ns: 42, Key: "c1"})
			return q, args, err
		}},
		{"conversations_totals", func() (string, []any, error) {
			return conversationTotalsSQL(gt, ConversationFilter{Project: "p", Since: since}, liveSet{ids: []string{"t1"}}, []string{"c1", "c2"})
		}},
		{"conversations_totals_settled", func() (string, []any, error) {
			return conversationTotalsSQL(gt, ConversationFilter{Project: "p", Since: since, Until: until}, liveSet{}, []string{"c1"})
		}},
		{"conversations_candidates", func() (string, []any, error) {
			return conversationCandidatesSQL(gt, ConversationFilter{Project: "p", Since: since, Limit: 50}, liveSet{ids: []string{"t1"}}, nil)
		}},
		{"conversations_candidates_within_bound", func() (string, []any, error) {
			bound := uint64(1796083260500000000)
			return conversationCandidatesSQL(gt, ConversationFilter{Project: "p", Since: since, Limit: 50}, liveSet{ids: []string{"t1"}}, &bound)
		}},
		{"conversations_candidates_live_rows", func() (string, []any, error) {
			lv := liveSet{ids: []string{"t1", "t2"}, rows: liveRowsOf([]*runRow{
				{TraceID: "t1", Conv: "c1", StartNs: 10, EndNs: 20, Err: 1, In: 100, Out: 7, CTotal: 0.25, CIn: 0.2, COut: 0.05},
				{TraceID: "t2", Conv: "c2", StartNs: 30, EndNs: 40, CR: 64, CW: 32, RS: 5, CTotal: 1e-7, CCR: 1e-7}})}
			return conversationCandidatesSQL(gt, ConversationFilter{Project: "p", Since: since, Limit: 50}, lv, nil)
		}},
		{"conversations_totals_live_rows", func() (string, []any, error) {
			lv := liveSet{ids: []string{"t1"}, rows: liveRowsOf([]*runRow{{TraceID: "t1", Conv: "c1", StartNs: 10, EndNs: 20, CTotal: 0.25}})}
			return conversationTotalsSQL(gt, ConversationFilter{Project: "p", Since: since}, lv, []string{"c1", "c2"})
		}},
		{"conversations_totals_no_live_rows", func() (string, []any, error) {
			return conversationTotalsSQL(gt, ConversationFilter{Project: "p", Since: since}, liveSet{ids: []string{"t1"}, rows: liveRowsOf(nil)}, []string{"c1", "c2"})
		}},
		{"conversations_bound", func() (string, []any, error) {
			return conversationBoundSQL(gt, ConversationFilter{Project: "p", Since: since, Until: until}, 204)
		}},
		{"conversations_current_versions", built(currentVersionsSQL(gt, "p", []uint32{1796083200, 1796083260}, ids))},
		{"conversations_transcript_calls", built(transcriptCallsSQL(gt, "p", set, since, until))},
		// outcomes.go and versions.go
		{"outcomes_posted", built(postedOutcomesSQL(gt, "p", set, since, until))},
		{"outcomes_of_spans", built(spanOutcomesSQL(gt, "p", set, since, until))},
		{"versions_config_spans", built(runConfigSpansSQL(gt, "p", set, since, until))},
		{"versions_config_content", built(runConfigContentSQL(gt, "p", set, since, until))},
		// searchkeys.go: the window's edges are not whole hours; of its
		// hours, two are not indexed (one range), the others are.
		{"search_keys", built(searchKeysSQL(gt, "p", keyWindow.index, keyWindow.live))},
		{"search_values_indexed", built(searchValuesSQL(gt, "p", sqlf("if(has(attr_keys, ?), concat('1', attr_values[indexOf(attr_keys, ?)]), '')", "k", "k"),
			keyWindow.live, &indexedValues{scope: "span", key: "k", index: keyWindow.index}))},
		{"search_values_live", built(searchValuesSQL(gt, "p", sqlf("if(model != '', concat('1', model), '')"), sqlf("start >= ? AND start <= ?", since, until), nil))},
		{"search_keys_nothing_indexed", built(searchKeysSQL(gt, "p", keyWindowNoMarks.index, keyWindowNoMarks.live))},
		{"search_key_marks", built(keyIndexMarksSQL(gt, since, until))},
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

// built is a case of a builder that cannot fail.
func built(q string, args []any) func() (string, []any, error) {
	return func() (string, []any, error) { return q, args, nil }
}

// TestSelectRunsRefusesUnknownStatus: the builder refuses what no parser
// would give it.
func TestSelectRunsRefusesUnknownStatus(t *testing.T) {
	if _, err := selectRuns(goldenTables{}, RunFilter{Project: "p", Status: "recovered"}); err == nil {
		t.Error("status recovered: no error")
	}
}
