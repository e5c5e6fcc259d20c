package ui_test

import (
	"fmt"
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

// capsFit is where the caps table and its last column (the suggested
// --run-cap) end, in CSS pixels from the window's left edge.
type capsFit struct {
	Window    float64   `json:"window"`    // innerWidth
	Page      float64   `json:"page"`      // the document's scroll width
	Container float64   `json:"container"` // #caps's right edge
	Table     float64   `json:"table"`     // #caps-table's right edge
	Last      []float64 `json:"last"`      // each row's last cell's right edge, header first
	Specs     []float64 `json:"specs"`     // each [data-spec]'s right edge
	Overflow  []string  `json:"overflow"`  // last-column cells whose content is wider than the cell
}

const readCapsFit = `(() => {
  const t = document.getElementById('caps-table');
  const right = (el) => el.getBoundingClientRect().right;
  const last = [...t.querySelectorAll('tr > :last-child')];
  return {
    window: innerWidth, page: document.documentElement.scrollWidth,
    container: right(document.getElementById('caps')), table: right(t),
    last: last.map(right), specs: [...t.querySelectorAll('[data-spec]')].map(right),
    overflow: last.filter((c) => c.scrollWidth > c.clientWidth + 1).map((c) => c.textContent),
  };
})()`

// TestCapsTableFits: the Reliability page's caps table, for a task whose
// five runs (like TestCapsFromData's: model calls, tool calls, an approval
// wait, a failed run over two caps) fill every column and which has a
// configured cap, fits a 1440 px window — and the tests' 1280 px one —
// with nothing cut: the table ends inside its section, the section inside
// the window, the page does not scroll sideways, and the suggested
// --run-cap column's cells and specs end inside the table.
func TestCapsTableFits(t *testing.T) {
	const task = "refund_escalation_review"
	caps, err := safety.ParseCaps([]string{"task=" + task + " iterations=5 tokens=2000 wall=5s"})
	if err != nil {
		t.Fatal(err)
	}
	tally := tallytest.Start(t, func(o *tallytest.Config) {
		o.Reader = query.NewReader(o.Store, query.WithRunCaps(caps))
		o.Server.UI = ui.Handler(ui.WithRuns(o.Reader, api.RequestProject))
	})
	base := time.Now().Add(-2 * time.Hour).Truncate(time.Millisecond)
	send := func(i, chats, tools, wallMs, waitFrom, waitTo int, fail bool) {
		spans := []tallytest.Span{{Key: "root", Name: "invoke_agent helper", End: wallMs, Attrs: []attribute.KeyValue{
			attribute.String("gen_ai.operation.name", "invoke_agent"), attribute.String("gen_ai.agent.name", "helper"),
			attribute.String("task.name", task)}}}
		if fail {
			spans[0].Error = "ValueError"
		}
		for c := range chats {
			spans = append(spans, tallytest.Chat(fmt.Sprintf("chat%d", c), "root", "gpt-4o-mini", 10+c*100, 60+c*100, "", 3000, 1000))
		}
		if waitTo > 0 {
			spans = append(spans, tallytest.Span{Key: "ask", Parent: "root", Name: "approval", Start: waitFrom, End: waitTo,
				Attrs: []attribute.KeyValue{attribute.String("tally.approval.decision", "approved")}})
		}
		for k := range tools {
			start := max(waitTo, 10+chats*100) + k*100
			spans = append(spans, tallytest.Tool(fmt.Sprintf("tool%d", k), "root", "search_docs", start, start+50))
		}
		tallytest.SendSpans(t, tally.URL, "desk", base.Add(time.Duration(i)*time.Minute), spans)
	}
	send(0, 1, 0, 1000, 0, 0, false)
	send(1, 2, 1, 2000, 500, 1500, false)
	send(2, 3, 2, 3000, 0, 0, false)
	send(3, 4, 3, 4000, 0, 0, false)
	send(4, 12, 0, 2000, 0, 0, true)

	ctx := newBrowser(t)
	for _, width := range []int64{1440, 1280} {
		run(t, ctx, fmt.Sprintf("%d px", width), chromedp.EmulateViewport(width, 900))
		open(t, ctx, tally.URL+"/reliability?since=3h")
		waitFor(t, ctx, `!!document.querySelector('#caps-table [data-spec]')`)
		fit := run(t, ctx, "measure", chromedp.Evaluate[capsFit](readCapsFit))
		if fit.Window != float64(width) || len(fit.Last) != 2 || len(fit.Specs) != 1 {
			t.Fatalf("at %d px: %+v; want a %d px window, a header and one task row", width, fit, width)
		}
		const slack = 0.5 // sub-pixel rounding
		if fit.Page > fit.Window || fit.Container > fit.Window+slack || fit.Table > fit.Container+slack {
			t.Errorf("at %d px the caps table overflows: it ends at %.1f px, its section at %.1f, the page is %.0f px wide", width, fit.Table, fit.Container, fit.Page)
		}
		for i, r := range append(fit.Last, fit.Specs...) {
			if r > fit.Table+slack || r > fit.Window+slack {
				t.Errorf("at %d px the suggested --run-cap column is cut: its element %d ends at %.1f px, the table at %.1f, the window at %.0f", width, i, r, fit.Table, fit.Window)
			}
		}
		if len(fit.Overflow) > 0 {
			t.Errorf("at %d px last-column cells overflow: %q", width, fit.Overflow)
		}
	}
}
