// Package clustertest runs tally on a ClickHouse cluster: two shards, the
// first with two replicas coordinated by ZooKeeper, and two tally servers
// writing through different nodes.
package clustertest

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/tallyhq/tally/internal/tallytest"
	"github.com/tallyhq/tally/internal/testenv"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/rollup"
	"github.com/tallyhq/tally/schema"
	"github.com/tallyhq/tally/support/lease"
	"github.com/tallyhq/tally/support/schedule"
)

const (
	clusterName = "tally"
	database    = "tally_cluster"
	project     = "default"
)

// tally is one in-process tally server and its own store.
type tally struct {
	url   string
	store *schema.Store
}

func startTally(t *testing.T, addr string) *tally {
	t.Helper()
	ctx := context.Background()
	store, err := schema.Open(ctx, schema.Config{Addr: addr, Database: database, Cluster: clusterName})
	if err != nil {
		t.Fatalf("open store at %s: %v", addr, err)
	}
	t.Cleanup(func() { store.Close() })
	if err := store.Migrate(ctx); err != nil {
		t.Fatalf("migrate through %s: %v", addr, err)
	}
	in := tallytest.StartOn(t, store)
	return &tally{url: in.URL, store: store}
}

// idKey carries the trace and span id the next span gets.
type idKey struct{}

type ids struct {
	trace trace.TraceID
	span  trace.SpanID
}

// fixedIDs gives each span the ids its context names, so that a run can be
// recorded twice with identical ids (a duplicate delivery).
type fixedIDs struct{}

func (fixedIDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	v := ctx.Value(idKey{}).(ids)
	return v.trace, v.span
}

func (fixedIDs) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	return ctx.Value(idKey{}).(ids).span
}

func traceID(run int) trace.TraceID {
	var id trace.TraceID
	id[0] = 0x7a
	binary.BigEndian.PutUint64(id[8:], uint64(run)+1)
	return id
}

func spanID(run, n int) trace.SpanID {
	var id trace.SpanID
	binary.BigEndian.PutUint32(id[:4], uint32(run)+1)
	binary.BigEndian.PutUint32(id[4:], uint32(n)+1)
	return id
}

// recordRuns records runs [from, to) with the real OTel SDK. Run i is an
// agent span "invoke_agent planner" (task triage) with two children: a chat
// call to openai gpt-4o with 1000·(i+1) input and 100·(i+1) output tokens,
// and an execute_tool call of "search". Run i starts at base + i minutes.
func recordRuns(t *testing.T, base time.Time, from, to int) []sdktrace.ReadOnlySpan {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithIDGenerator(fixedIDs{}))
	tr := tp.Tracer("clustertest")
	for i := from; i < to; i++ {
		start := base.Add(time.Duration(i) * time.Minute)
		ctx := context.WithValue(context.Background(), idKey{}, ids{traceID(i), spanID(i, 0)})
		ctx, root := tr.Start(ctx, "invoke_agent planner", trace.WithTimestamp(start), trace.WithAttributes(
			attribute.String("gen_ai.operation.name", "invoke_agent"),
			attribute.String("gen_ai.agent.name", "planner"),
			attribute.String("task.name", "triage")))
		_, chat := tr.Start(context.WithValue(ctx, idKey{}, ids{traceID(i), spanID(i, 1)}), "chat gpt-4o",
			trace.WithTimestamp(start.Add(time.Second)), trace.WithAttributes(
				attribute.String("gen_ai.operation.name", "chat"),
				attribute.String("gen_ai.provider.name", "openai"),
				attribute.String("gen_ai.request.model", "gpt-4o"),
				attribute.String("gen_ai.response.model", "gpt-4o"),
				attribute.Int("gen_ai.usage.input_tokens", 1000*(i+1)),
				attribute.Int("gen_ai.usage.output_tokens", 100*(i+1))))
		chat.End(trace.WithTimestamp(start.Add(3 * time.Second)))
		_, tool := tr.Start(context.WithValue(ctx, idKey{}, ids{traceID(i), spanID(i, 2)}), "execute_tool search",
			trace.WithTimestamp(start.Add(4*time.Second)), trace.WithAttributes(
				attribute.String("gen_ai.operation.name", "execute_tool"),
				attribute.String("gen_ai.tool.name", "search"),
				attribute.String("gen_ai.tool.call.id", fmt.Sprintf("call-%d", i))))
		tool.End(trace.WithTimestamp(start.Add(5 * time.Second)))
		root.End(trace.WithTimestamp(start.Add(6 * time.Second)))
	}
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	return rec.Ended()
}

// send exports spans to a tally with the SDK's OTLP/HTTP exporter; a nil
// error means tally acknowledged them.
func send(t *testing.T, to *tally, spans []sdktrace.ReadOnlySpan) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(to.url+"/v1/traces"),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: true, InitialInterval: 100 * time.Millisecond,
			MaxInterval: time.Second, MaxElapsedTime: time.Minute}))
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.ExportSpans(ctx, spans); err != nil {
		t.Fatalf("export %d spans to %s: %v", len(spans), to.url, err)
	}
	if err := exp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// syncReplicas makes a node's replicas catch up with their shards, so that
// what another replica acknowledged is readable there.
func syncReplicas(t *testing.T, nodes ...*testenv.ClickHouseServer) {
	t.Helper()
	for _, n := range nodes {
		store, err := schema.Open(context.Background(), schema.Config{Addr: n.Addr, Database: database, Cluster: clusterName})
		if err != nil {
			t.Fatal(err)
		}
		for _, stmt := range store.SyncReplicaStatements() {
			if err := store.Conn().Exec(context.Background(), stmt); err != nil {
				t.Fatalf("%s on %s: %v", stmt, n.Addr, err)
			}
		}
		store.Close()
	}
}

// expected figures of runs [0, n): Σ(i+1) for i < n is n(n+1)/2 "units";
// each unit is 1000 input and 100 output tokens of gpt-4o, priced at $2.50
// and $10.00 per million: 0.0025 + 0.001 = $0.0035.
type expected struct {
	runs, spans, llmCalls, toolCalls int
	input, output                    uint64
	costUSD                          float64
}

func expectFor(n int) expected {
	units := n * (n + 1) / 2
	return expected{runs: n, spans: 3 * n, llmCalls: n, toolCalls: n,
		input: uint64(1000 * units), output: uint64(100 * units), costUSD: 0.0035 * float64(units)}
}

func checkRuns(t *testing.T, label string, tl *tally, since time.Time, want expected) {
	t.Helper()
	page, err := query.NewReader(tl.store).Runs(context.Background(), query.RunFilter{Project: project, Since: since, Limit: 1000})
	if err != nil {
		t.Fatalf("%s: runs: %v", label, err)
	}
	if len(page.Runs) != want.runs {
		t.Fatalf("%s: %d runs, want %d", label, len(page.Runs), want.runs)
	}
	byID := map[string]query.RunSummary{}
	for _, r := range page.Runs {
		byID[r.TraceID] = r
	}
	for i := 0; i < want.runs; i++ {
		r, ok := byID[traceID(i).String()]
		if !ok {
			t.Errorf("%s: run %d (%s) missing", label, i, traceID(i))
			continue
		}
		// Run i: 3 spans, one LLM call with 1000(i+1) in / 100(i+1) out.
		if r.Spans != 3 || r.LLMCalls != 1 || r.ToolCalls != 1 ||
			r.Usage.Input != uint64(1000*(i+1)) || r.Usage.Output != uint64(100*(i+1)) {
			t.Errorf("%s: run %d = %d spans, %d llm, %d tool, usage %+v; want 3, 1, 1, %d in / %d out",
				label, i, r.Spans, r.LLMCalls, r.ToolCalls, r.Usage, 1000*(i+1), 100*(i+1))
		}
		if math.Abs(r.Cost.Total-0.0035*float64(i+1)) > 1e-9 {
			t.Errorf("%s: run %d cost %.6f, want %.6f", label, i, r.Cost.Total, 0.0035*float64(i+1))
		}
	}
	// The run tree, read from the run's shard.
	detail, err := query.NewReader(tl.store).Run(context.Background(), project, traceID(0).String())
	if err != nil {
		t.Fatalf("%s: run tree: %v", label, err)
	}
	if len(detail.Roots) != 1 || len(detail.Roots[0].Children) != 2 {
		t.Errorf("%s: run 0 tree has %d roots (want 1 with 2 children)", label, len(detail.Roots))
	}
}

func checkCosts(t *testing.T, label string, tl *tally, since, until time.Time, want expected) {
	t.Helper()
	rep, err := query.NewReader(tl.store).Costs(context.Background(), query.CostFilter{Project: project, By: "model", Since: since, Until: until})
	if err != nil {
		t.Fatalf("%s: costs: %v", label, err)
	}
	tot := rep.Total
	if tot.Spans != uint64(want.spans) || tot.LLMCalls != uint64(want.llmCalls) || tot.ToolCalls != uint64(want.toolCalls) ||
		tot.Usage.Input != want.input || tot.Usage.Output != want.output || math.Abs(tot.Cost.Total-want.costUSD) > 1e-9 {
		t.Errorf("%s: costs total = %d spans, %d llm, %d tool, %d in, %d out, $%.6f; want %d, %d, %d, %d, %d, $%.6f",
			label, tot.Spans, tot.LLMCalls, tot.ToolCalls, tot.Usage.Input, tot.Usage.Output, tot.Cost.Total,
			want.spans, want.llmCalls, want.toolCalls, want.input, want.output, want.costUSD)
	}
	// By model: the chat spans under gpt-4o carry all tokens and cost; the
	// agent and tool spans (2 per run) have no model.
	groups := map[string]query.CostTotals{}
	for _, g := range rep.Groups {
		groups[g.Key] = g.CostTotals
	}
	chat, other := groups["gpt-4o"], groups[""]
	if len(groups) != 2 || chat.Spans != uint64(want.llmCalls) || chat.Usage.Input != want.input ||
		math.Abs(chat.Cost.Total-want.costUSD) > 1e-9 || other.Spans != uint64(want.spans-want.llmCalls) || other.Cost.Total != 0 {
		t.Errorf("%s: cost groups %+v; want gpt-4o with %d spans, %d in, $%.6f and \"\" with %d spans, $0",
			label, rep.Groups, want.llmCalls, want.input, want.costUSD, want.spans-want.llmCalls)
	}
}

// localSpanCount is the number of distinct spans a node stores itself.
func localSpanCount(t *testing.T, n *testenv.ClickHouseServer) uint64 {
	t.Helper()
	var c uint64
	if err := n.Conn(t, "default").QueryRow(context.Background(),
		"SELECT count() FROM `"+database+"`.`spans_local` FINAL").Scan(&c); err != nil {
		t.Fatalf("count spans on %s: %v", n.Addr, err)
	}
	return c
}

func TestClusterTwoShardsReplicatedTwoTallies(t *testing.T) {
	zk := testenv.StartZooKeeper(t)
	cl := testenv.StartClickHouseCluster(t, testenv.ClusterSpec{Name: clusterName, Replicas: []int{2, 1}, ZooKeeper: zk})
	s1r1, s1r2, s2r1 := cl.Shards[0][0], cl.Shards[0][1], cl.Shards[1][0]

	// Two tallies, each writing through its own node, failing over to
	// shard 2's node; both apply the migrations (the second finds them done).
	a := startTally(t, s1r1.Addr+","+s2r1.Addr)
	b := startTally(t, s1r2.Addr+","+s2r1.Addr)

	// Every node has the local Replicated table and the Distributed one.
	for _, n := range cl.Nodes() {
		engines := map[string]string{}
		rows, err := n.Conn(t, "default").Query(context.Background(),
			"SELECT name, engine FROM system.tables WHERE database = ?", database)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var name, engine string
			if err := rows.Scan(&name, &engine); err != nil {
				t.Fatal(err)
			}
			engines[name] = engine
		}
		rows.Close()
		for _, table := range []string{schema.TableSpans, schema.TableContent, schema.TableCostRollup, schema.TableMigrations, schema.TableLeases, schema.TableSpanFacts, schema.TableRuns, schema.TableRunMarks} {
			if engines[table] != "Distributed" || engines[table+"_local"] != "ReplicatedReplacingMergeTree" {
				t.Errorf("node %s: %s is %q and %s_local is %q; want Distributed over ReplicatedReplacingMergeTree",
					n.Addr, table, engines[table], table, engines[table+"_local"])
			}
		}
	}

	// Runs 0–7 start two hours ago, in a closed hour (so the rollup can
	// take it). 0–3 go to tally a, 4–7 to tally b, and 0–1 are delivered
	// again to b: a duplicate reaching another replica of the same shard.
	now := time.Now().UTC()
	base := now.Truncate(time.Hour).Add(-2 * time.Hour)
	since, until := base.Add(-time.Hour), now.Add(time.Hour)
	send(t, a, recordRuns(t, base, 0, 4))
	send(t, b, recordRuns(t, base, 4, 8))
	send(t, b, recordRuns(t, base, 0, 2))
	syncReplicas(t, s1r1, s1r2)

	// Runs 0–7: Σ(i+1) = 36 units → 36000 in, 3600 out, 36 × $0.0035 = $0.126;
	// 24 spans, the 6 duplicated ones counted once.
	want := expectFor(8)
	checkRuns(t, "tally a", a, since, want)
	checkRuns(t, "tally b", b, since, want)
	checkCosts(t, "tally a, live", a, since, until, want)

	// Both shards hold runs, and each span is stored once per shard.
	n1, n2 := localSpanCount(t, s1r1), localSpanCount(t, s2r1)
	if n1 == 0 || n2 == 0 || n1+n2 != uint64(want.spans) {
		t.Errorf("spans per shard: %d + %d; want both non-zero, adding up to %d", n1, n2, want.spans)
	}
	if r2 := localSpanCount(t, s1r2); r2 != n1 {
		t.Errorf("shard 1 replicas hold %d and %d spans; want the same", n1, r2)
	}

	// The hourly rollup, computed by tally a from every shard and read by
	// tally b, gives the same figures as the live path.
	stats, err := rollup.New(a.store, rollup.Config{Periods: schedule.Periods{Lookback: 4 * time.Hour}}).Refresh(context.Background(), now)
	if err != nil {
		t.Fatalf("rollup: %v", err)
	}
	if stats.HoursRecomputed == 0 {
		t.Fatalf("rollup recomputed no hour: %+v", stats)
	}
	syncReplicas(t, s1r1, s1r2)
	checkCosts(t, "tally b, rolled up", b, since, now.Truncate(time.Hour), want)

	// One alert evaluator for the cluster: a's lease excludes b's.
	leaseA, err := lease.New(a.store, lease.Config{Name: "alerts-evaluator", Holder: "a"})
	if err != nil {
		t.Fatal(err)
	}
	leaseB, err := lease.New(b.store, lease.Config{Name: "alerts-evaluator", Holder: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if held, err := leaseA.TryAcquire(context.Background()); err != nil || !held {
		t.Fatalf("a takes the lease: %v, %v", held, err)
	}
	if held, err := leaseB.TryAcquire(context.Background()); err != nil || held {
		t.Fatalf("b while a holds the lease: %v, %v; want false", held, err)
	}

	// Stop shard 1's first replica — tally a's node. Reads and writes go on:
	// a fails over to shard 2's node, which reaches shard 1 through its
	// other replica; b's node is that replica.
	s1r1.Stop(t)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); send(t, a, recordRuns(t, base, 8, 10)) }()
	go func() { defer wg.Done(); send(t, b, recordRuns(t, base, 10, 12)) }()
	wg.Wait()

	// Runs 0–11: Σ(i+1) = 78 units → 78000 in, 7800 out, $0.273; 36 spans.
	want = expectFor(12)
	checkRuns(t, "tally a, replica down", a, since, want)
	checkRuns(t, "tally b, replica down", b, since, want)
	// Runs 8–11 landed in the hour rolled up before: the next refresh (the
	// server's rollup job runs one a minute) notices and recomputes it,
	// with a replica down.
	stats, err = rollup.New(a.store, rollup.Config{Periods: schedule.Periods{Lookback: 4 * time.Hour}}).Refresh(context.Background(), now)
	if err != nil {
		t.Fatalf("rollup, replica down: %v", err)
	}
	if stats.HoursRecomputed == 0 {
		t.Fatalf("rollup with late runs recomputed no hour: %+v", stats)
	}
	checkCosts(t, "tally b, replica down", b, since, until, want)

	// The lease hands over when its holder goes away: a releases, b takes it.
	if err := leaseA.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if held, err := leaseB.TryAcquire(context.Background()); err != nil || !held {
		t.Fatalf("b after a released: %v, %v; want true", held, err)
	}

	// The stopped replica comes back and catches up.
	s1r1.Start(t)
	syncReplicas(t, s1r1)
	if got, want := localSpanCount(t, s1r1), localSpanCount(t, s1r2); got != want {
		t.Errorf("restarted replica holds %d spans, its peer %d", got, want)
	}

	// The API agrees.
	for _, tl := range []*tally{a, b} {
		resp, err := http.Get(tl.url + "/api/v1/runs?limit=1000&since=" + since.Format(time.RFC3339))
		if err != nil {
			t.Fatal(err)
		}
		var page struct {
			Runs []json.RawMessage `json:"runs"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || len(page.Runs) != 12 {
			t.Errorf("GET %s/api/v1/runs: %s, %d runs (%v); want 200 and 12", tl.url, resp.Status, len(page.Runs), err)
		}
	}
}
