package ui_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"go.opentelemetry.io/otel/attribute"

	"github.com/tallyhq/tally/api"
	"github.com/tallyhq/tally/internal/tallytest"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/safety"
	"github.com/tallyhq/tally/ui"
)

// TestRunPageSafetySignals: tallytest.SendSafetyRun's run under its policy
// raises a duplicate side effect (the second charge) and an unsafe retry
// (the second refund). The run page lists both in its safety review and
// badges exactly those two rows; the first refund's detail shows its
// effect class and terminal status.
func TestRunPageSafetySignals(t *testing.T) {
	policy, err := safety.ParsePolicy(tallytest.SafetyPolicy)
	if err != nil {
		t.Fatal(err)
	}
	tally := tallytest.Start(t, func(o *tallytest.Config) {
		o.Reader = query.NewReader(o.Store, query.WithToolEffects(policy))
		o.Server.UI = ui.Handler(ui.WithRuns(o.Reader, api.RequestProject))
	})
	id, spans := tallytest.SendSafetyRun(t, tally.URL, time.Now().Add(-time.Hour).Truncate(time.Millisecond))
	ctx := newBrowser(t)
	open(t, ctx, tally.URL+"/runs/"+id)
	run(t, ctx, "waterfall drawn", chromedp.WaitReady(chromedp.CSS("body[data-rendered]")))
	review := run(t, ctx, "review", chromedp.Text(chromedp.CSS("#run-signals")))
	if !strings.Contains(review, "duplicate_side_effect") || !strings.Contains(review, "unsafe_retry") {
		t.Errorf("safety review %q: want both signals", review)
	}
	if g := run(t, ctx, "guardrails", chromedp.Text(chromedp.CSS("#run-guardrails"))); g != "Guardrails: pii passed" {
		t.Errorf("guardrails %q, want pii passed", g)
	}
	badged := run(t, ctx, "badges", chromedp.Evaluate[[]string](`[...document.querySelectorAll('#wf-rows .wf-row .mark.sig')].map(m => m.closest('.wf-row').dataset.spanId + ':' + m.dataset.signal)`))
	want := []string{spans["charge2"] + ":duplicate_side_effect", spans["refund2"] + ":unsafe_retry"}
	if strings.Join(badged, ",") != strings.Join(want, ",") {
		t.Errorf("badged rows %v, want %v", badged, want)
	}
	run(t, ctx, "select refund1", chromedp.Click(chromedp.CSS(`#wf-rows .wf-row[data-span-id="`+spans["refund1"]+`"] .name`)))
	waitFor(t, ctx, `!!document.getElementById('detail-name')`)
	detail := run(t, ctx, "detail", chromedp.Text(chromedp.CSS("#detail")))
	if !strings.Contains(detail, "non_idempotent") || !strings.Contains(detail, "ambiguous") {
		t.Errorf("refund detail lacks effect non_idempotent / status ambiguous:\n%.400s", detail)
	}
}

// TestReliabilityPage: tallytest.SendSafetyRun's run (a charge twice, a
// refund retried after a timeout; each charge approved by ana, 400 ms
// each) and a run wiring money with no approval, under SafetyPolicy plus
// wire_*=irreversible. The Reliability page counts 3 signals in 2 of 2
// runs, one row per kind and tool; the steps table has each tool's effect
// and statuses (the refund: 1 ok, 1 ambiguous); the caps table suggests
// for checkout (8 tool calls, no model calls, 9 s wall clock less 800 ms
// of approval waits = 8.2 s active) a wall cap of 2.5 × 8.2 s = 20.5 s,
// rounded up to 21 s. By task, the groups are checkout's and wire's (equal
// counts sort by kind). The
// tools page shows the effect classes too.
func TestReliabilityPage(t *testing.T) {
	policy, err := safety.ParsePolicy(append([]string{"wire_*=irreversible"}, tallytest.SafetyPolicy...))
	if err != nil {
		t.Fatal(err)
	}
	tally := tallytest.Start(t, func(o *tallytest.Config) {
		o.Reader = query.NewReader(o.Store, query.WithToolEffects(policy))
		o.Server.UI = ui.Handler(ui.WithRuns(o.Reader, api.RequestProject))
	})
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	tallytest.SendSafetyRun(t, tally.URL, base)
	wire, _ := tallytest.SendSpans(t, tally.URL, "bank", base.Add(time.Minute), []tallytest.Span{
		{Key: "root", Name: "invoke_agent teller", End: 500, Attrs: []attribute.KeyValue{attribute.String("gen_ai.operation.name", "invoke_agent"),
			attribute.String("gen_ai.agent.name", "teller"), attribute.String("task.name", "wire")}},
		tallytest.Tool("wire", "root", "wire_transfer", 120, 150),
	})
	ctx := newBrowser(t)
	open(t, ctx, tally.URL+"/reliability?since=2h")
	waitFor(t, ctx, `!!document.getElementById('caps-table')`)
	total := run(t, ctx, "total", chromedp.Text(chromedp.CSS("#signals-total")))
	if total != "3 signals in 2 of 2 runs" {
		t.Errorf("total %q", total)
	}
	rows := run(t, ctx, "signal rows", chromedp.Evaluate[[]string](`[...document.querySelectorAll('#signals-table tbody tr')].map(r => r.dataset.kind + '@' + r.dataset.subject)`))
	if strings.Join(rows, ",") != "duplicate_side_effect@charge_card,ungated_action@wire_transfer,unsafe_retry@refund" {
		t.Errorf("signal rows %v", rows)
	}
	if link := run(t, ctx, "example", chromedp.Evaluate[string](`document.querySelector('#signals-table tr[data-kind="ungated_action"] a.mono').getAttribute('href')`)); link != "/runs/"+wire {
		t.Errorf("example run link %q, want /runs/%s", link, wire)
	}
	steps := run(t, ctx, "steps", chromedp.Evaluate[[]string](`[...document.querySelectorAll('#steps-table tbody tr')].map(r => r.dataset.tool + ':' + r.querySelector('[data-effect]').dataset.effect + ':' + [...r.querySelectorAll('[data-status]')].map(s => s.textContent).join('/'))`))
	want := []string{"charge_card:irreversible:2/0/0/0/0/0", "refund:non_idempotent:1/0/1/0/0/0", "search_docs:read:1/0/1/0/0/0",
		"upsert_profile:idempotent:2/0/0/0/0/0", "wire_transfer:irreversible:1/0/0/0/0/0"}
	if strings.Join(steps, ",") != strings.Join(want, ",") {
		t.Errorf("steps %v, want %v", steps, want)
	}
	if spec := run(t, ctx, "spec", chromedp.Text(chromedp.CSS(`#caps-table tr[data-task="checkout"] [data-spec]`))); spec != "task=checkout wall=21s" {
		t.Errorf("checkout spec %q, want task=checkout wall=21s", spec)
	}
	run(t, ctx, "by task", chromedp.Click(chromedp.CSS(`#signals-by a[data-by="task"]`)))
	waitFor(t, ctx, `location.search.includes('by=task') && !!document.getElementById('caps-table')`)
	rows = run(t, ctx, "task rows", chromedp.Evaluate[[]string](`[...document.querySelectorAll('#signals-table tbody tr')].map(r => r.dataset.kind + '@' + r.dataset.subject)`))
	if strings.Join(rows, ",") != "duplicate_side_effect@checkout,ungated_action@wire,unsafe_retry@checkout" {
		t.Errorf("rows by task %v", rows)
	}

	open(t, ctx, tally.URL+"/tools?since=2h")
	waitFor(t, ctx, `!!document.getElementById('tools-table') && document.getElementById('tools').dataset.review === 'loaded'`)
	effect := run(t, ctx, "tool effect", chromedp.Evaluate[string](`document.querySelector('#tools-table tr[data-tool="charge_card"] [data-effect]').dataset.effect`))
	status := run(t, ctx, "tool status", chromedp.Text(chromedp.CSS(`#tools-table tr[data-tool="refund"] [data-status="ambiguous"]`)))
	if effect != "irreversible" || status != "ambiguous 1" {
		t.Errorf("tools page: charge_card effect %q, refund %q; want irreversible, ambiguous 1", effect, status)
	}
}
