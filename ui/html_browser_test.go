package ui_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestHTMLEscapesByDefault runs lib/html.js in Chromium: an interpolated
// string is escaped in text and in attributes, a nested html value and an
// array of them are kept, null draws nothing, and the slips the module
// exists to catch throw: show() of a plain string, and an html value turned
// into a string.
func TestHTMLEscapesByDefault(t *testing.T) {
	tally := startTally(t)
	ctx := newBrowser(t)
	open(t, ctx, tally.URL+"/runs")
	got := run(t, ctx, "html.js", chromedp.Evaluate[[]string](strings.ReplaceAll(`(async () => {
		const { html, esc, show, join } = await import('/static/lib/html.js');
		const evil = '<img src=x onerror="alert(1)">&';
		const out = [
			html´<b title="${evil}">${evil}</b>´.markup,
			html´<ul>${['a', '<b>'].map((x) => html´<li>${x}</li>´)}</ul>´.markup,
			html´${null}${undefined}${0}${false}${esc('<i>')}´.markup,
			join([html´<a>1</a>´, '<2>'], ', ').markup,
		];
		const div = document.createElement('div');
		try { show(div, '<b>x</b>'); out.push('show took a string'); } catch (e) { out.push('show refused a string'); }
		try { out.push('' + html´<b>x</b>´); } catch (e) { out.push('no string'); }
		return out;
	})()`, "´", "`"), chromedp.EvalAwaitPromise))
	want := []string{
		`<b title="&lt;img src=x onerror=&quot;alert(1)&quot;&gt;&amp;">&lt;img src=x onerror=&quot;alert(1)&quot;&gt;&amp;</b>`,
		`<ul><li>a</li><li>&lt;b&gt;</li></ul>`,
		`0false&lt;i&gt;`,
		`<a>1</a>, &lt;2&gt;`,
		"show refused a string",
		"no string",
	}
	if len(got) != len(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("case %d:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
}
