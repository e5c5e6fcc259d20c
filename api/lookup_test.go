package api_test

import (
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/tallyhq/tally/internal/tallytest"
	"github.com/tallyhq/tally/query"
)

// postRuns sends one root span per trace id through OTLP/HTTP protobuf.
func postRuns(t *testing.T, url string, traceIDs ...string) {
	t.Helper()
	td := ptrace.NewTraces()
	ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
	start := time.Now().Add(-time.Hour)
	for i, id := range traceIDs {
		var tid [16]byte
		if _, err := hex.Decode(tid[:], []byte(id)); err != nil {
			t.Fatal(err)
		}
		sp := ss.Spans().AppendEmpty()
		sp.SetTraceID(pcommon.TraceID(tid))
		sp.SetSpanID(pcommon.SpanID{1, 2, 3, 4, 5, 6, 7, byte(i + 1)})
		sp.SetName("invoke_agent lookup")
		sp.Attributes().PutStr("gen_ai.operation.name", "invoke_agent")
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Second)))
	}
	tallytest.PostTraces(t, url, td)
}

// TestShortTraceIDs: the API takes the 8-character id the UI shows (or any
// longer prefix) when it names one run, lists the matches when it names
// several, and answers 404 when it names none.
func TestShortTraceIDs(t *testing.T) {
	tally := tallytest.Start(t)
	const (
		a = "abcd1234" + "000000000000000000000000"
		b = "abcd1234" + "ffff00000000000000000000"
		c = "0badc0de" + "000000000000000000000001"
	)
	postRuns(t, tally.URL, a, b, c)
	for _, tc := range []struct {
		path     string
		code     int
		traceID  string // the run answered, for 200
		contains string // in the error, otherwise
	}{
		{"/api/v1/runs/0badc0de", 200, c, ""},
		{"/api/v1/runs/0BADC0DE", 200, c, ""},
		{"/api/v1/runs/abcd1234f", 200, b, ""},
		{"/api/v1/runs/abcd12340", 200, a, ""},
		{"/api/v1/runs/abcd1234", 400, "", "trace id prefix abcd1234 is ambiguous: it starts " + a + ", " + b},
		{"/api/v1/runs/12345678", 404, "", "no run's trace id starts with 12345678"},
		{"/api/v1/runs/abcd123", 400, "", "the first 8 or more"},
		{"/api/v1/runs/0badc0de/explain", 200, "", ""},
		{"/api/v1/runs/0badc0de/fixture", 200, "", ""},
	} {
		code, _, body := get(t, tally.URL+tc.path, "")
		if code != tc.code {
			t.Errorf("%s: %d %s, want %d", tc.path, code, body, tc.code)
			continue
		}
		if tc.traceID != "" {
			var d query.RunDetail
			if err := json.Unmarshal(body, &d); err != nil || d.Summary.TraceID != tc.traceID {
				t.Errorf("%s: run %q (%v), want %s", tc.path, d.Summary.TraceID, err, tc.traceID)
			}
		}
		if tc.contains != "" && !strings.Contains(string(body), tc.contains) {
			t.Errorf("%s: %s lacks %q", tc.path, body, tc.contains)
		}
	}
}
