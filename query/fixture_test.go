package query_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tallyhq/tally/internal/tallytest"
	"github.com/tallyhq/tally/internal/testenv"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/replay"
	"github.com/tallyhq/tally/schema"
	"github.com/tallyhq/tally/tools/demo"
)

var updateDemoFixture = flag.Bool("update", false, "rewrite ../replay/testdata/demo_fixture.json (TestRegenerateDemoFixture)")

// fixtureReader returns a reader and store over a fresh, migrated database.
func fixtureReader(t *testing.T) (*query.Reader, *schema.Store) {
	t.Helper()
	store := testenv.OpenStore(t)
	return query.NewReader(store), store
}

// fxRun is one run of the fixture tests: an agent root span at start and a
// tool call one second later that lasts half a second.
type fxRun struct {
	project, traceID, conv, agent, task string
	start                               time.Time
}

func (r fxRun) spans() []schema.Span {
	ns := func(t time.Time) uint64 { return uint64(t.UnixNano()) }
	root := schema.Span{Project: r.project, TraceID: r.traceID, SpanID: "0000000000000001",
		Start: r.start.Truncate(time.Second), StartNs: ns(r.start), EndNs: ns(r.start.Add(3 * time.Second)),
		DurationNs: 3e9, Name: "invoke_agent " + r.agent, Status: "ok", Service: "svc", SpanType: schema.TypeAgent,
		Operation: "invoke_agent", AgentName: r.agent, ConversationID: r.conv, TaskName: r.task}
	toolStart := r.start.Add(time.Second)
	tool := schema.Span{Project: r.project, TraceID: r.traceID, SpanID: "0000000000000002", ParentSpanID: "0000000000000001",
		Start: toolStart.Truncate(time.Second), StartNs: ns(toolStart), EndNs: ns(toolStart.Add(500 * time.Millisecond)),
		DurationNs: 5e8, Name: "execute_tool lookup", Status: "ok", Service: "svc", SpanType: schema.TypeTool,
		Operation: "execute_tool", AgentName: r.agent, ToolName: "lookup", ToolCallID: "call_9"}
	return []schema.Span{root, tool}
}

func (r fxRun) content(kind, key, value string, version uint64) schema.Content {
	return schema.Content{Project: r.project, TraceID: r.traceID, SpanID: "0000000000000002",
		Start: r.start.Add(time.Second).Truncate(time.Second), Kind: kind, SourceKey: key, Value: value, Version: version}
}

// TestContentsAndFixture writes a run's rows directly, the content twice (a
// redelivery with a later version replaces the first), and the same trace id
// in another project.
func TestContentsAndFixture(t *testing.T) {
	reader, store := fixtureReader(t)
	ctx := context.Background()
	start := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	run := fxRun{"p1", strings.Repeat("a", 32), "conv-1", "planner", "lookup_task", start}
	other := fxRun{"p2", strings.Repeat("a", 32), "conv-x", "intruder", "other", start}
	for _, r := range []fxRun{run, other} {
		if err := store.InsertSpans(ctx, r.spans()); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.InsertContents(ctx, []schema.Content{
		run.content(schema.ContentToolArguments, "gen_ai.tool.call.arguments", `{"id":1}`, 1),
		run.content(schema.ContentToolResult, "gen_ai.tool.call.result", `{"old":true}`, 1),
		other.content(schema.ContentToolResult, "gen_ai.tool.call.result", `"secret of p2"`, 1),
	}); err != nil {
		t.Fatal(err)
	}
	if err := store.InsertContents(ctx, []schema.Content{
		run.content(schema.ContentToolResult, "gen_ai.tool.call.result", `{"name":"Ada", "id":1}`, 2),
	}); err != nil {
		t.Fatal(err)
	}

	rows, err := reader.Contents(ctx, "p1", strings.ToUpper(run.traceID))
	if err != nil {
		t.Fatal(err)
	}
	// Ordered by span, kind, source key: tool.arguments < tool.result; the
	// result's version 2 replaced version 1.
	var got []string
	for _, c := range rows {
		got = append(got, c.Kind+"="+c.Value)
	}
	want := []string{`tool.arguments={"id":1}`, `tool.result={"name":"Ada", "id":1}`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("contents %q, want %q", got, want)
	}

	f, err := reader.Fixture(ctx, "p1", run.traceID)
	if err != nil {
		t.Fatal(err)
	}
	wantRun := replay.RunInfo{TraceID: run.traceID, ConversationID: "conv-1", Agent: "planner", Task: "lookup_task",
		Service: "svc", StartedAt: "2025-03-01T10:00:00Z", SourceVersion: "dev"}
	if f.Run != wantRun {
		t.Errorf("run %+v, want %+v", f.Run, wantRun)
	}
	if len(f.Calls) != 1 {
		t.Fatalf("%d calls, want 1", len(f.Calls))
	}
	c := f.Calls[0]
	// The stored span has no args_hash, so it is the hash of the recorded
	// arguments: sha256 of {"id":1}, printf '%s' '{"id":1}' | sha256sum.
	if c.Tool != "lookup" || string(c.Arguments) != `{"id":1}` || string(c.Result) != `{"id":1,"name":"Ada"}` ||
		c.ArgsHash != "037c9214eef74cc3887f3a4f085b4e17d76280dafd273b0ee160c09c4ba1cfd4" ||
		c.StartedAt != "2025-03-01T10:00:01Z" || c.DurationMs != 500 || len(c.Missing) != 0 {
		t.Errorf("call %+v", c)
	}

	if _, err := reader.Fixture(ctx, "p1", strings.Repeat("b", 32)); !errors.Is(err, query.ErrNotFound) {
		t.Errorf("unknown run: %v, want ErrNotFound", err)
	}
	if _, err := reader.Fixture(ctx, "p3", run.traceID); !errors.Is(err, query.ErrNotFound) {
		t.Errorf("run of another project: %v, want ErrNotFound", err)
	}
	rows, err = reader.Contents(ctx, "p2", run.traceID)
	if err != nil || len(rows) != 1 || rows[0].Value != `"secret of p2"` {
		t.Errorf("p2 contents %+v, %v", rows, err)
	}
}

// demoFixturePath is the demo run's fixture that replay's example replays.
const demoFixturePath = "../replay/testdata/demo_fixture.json"

// TestRegenerateDemoFixture sends the demo traffic of `make run` (tally demo
// --runs 40 --seed 1), at a fixed start time, through the OTel SDK to an
// in-process tally, and exports the smallest run with a tool call that failed
// and was retried successfully (same tool, same arguments). The fixture must
// equal the committed ../replay/testdata/demo_fixture.json byte for byte;
// after a change to the demo traffic or the fixture format, regenerate it with
//
//	go test ./query -run TestRegenerateDemoFixture -update
//
// and update the expected output of replay's Example_demoRun.
func TestRegenerateDemoFixture(t *testing.T) {
	tally := tallytest.Start(t)
	ctx := context.Background()
	sum, err := demo.Send(ctx, demo.Config{Endpoint: tally.URL, Runs: 40, Seed: 1,
		Start: time.Date(2025, 6, 2, 9, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatalf("send demo: %v", err)
	}
	reader := query.NewReader(tally.Store)
	var best *replay.Fixture
	for _, id := range sum.TraceIDs {
		f, err := reader.Fixture(ctx, "default", id)
		if err != nil {
			t.Fatalf("fixture of %s: %v", id, err)
		}
		if retriedAfterFailure(f) && (best == nil || len(f.Calls) < len(best.Calls)) {
			best = f
		}
	}
	if best == nil {
		t.Fatal("no demo run has a failed tool call retried with success")
	}
	got, err := best.MarshalDeterministic()
	if err != nil {
		t.Fatal(err)
	}
	if *updateDemoFixture {
		if err := os.WriteFile(demoFixturePath, got, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s: run %s, %d calls", demoFixturePath, best.Run.TraceID, len(best.Calls))
		return
	}
	want, err := os.ReadFile(demoFixturePath)
	if err != nil {
		t.Fatalf("%v (generate it with: go test ./query -run TestRegenerateDemoFixture -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the demo run %s exports differently from %s; if the change is intended, regenerate it with\n"+
			"  go test ./query -run TestRegenerateDemoFixture -update\nand update replay's Example_demoRun output.\ngot:\n%s",
			best.Run.TraceID, demoFixturePath, got)
	}
}

// retriedAfterFailure reports whether a call that ended in error is followed
// by a successful call of the same tool with the same arguments.
func retriedAfterFailure(f *replay.Fixture) bool {
	for i, c := range f.Calls {
		if c.Error == nil || c.ArgsHash == "" {
			continue
		}
		for _, later := range f.Calls[i+1:] {
			if later.Tool == c.Tool && later.ArgsHash == c.ArgsHash && later.Error == nil {
				return true
			}
		}
	}
	return false
}
