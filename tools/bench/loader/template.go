package loader

import (
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"google.golang.org/protobuf/proto"

	"github.com/tallyhq/tally/ingest"
	"github.com/tallyhq/tally/schema"
	"github.com/tallyhq/tally/tools/demo"
)

// templateBase is the start time of the demo runs the templates are made
// of; only offsets from each run's first start are kept.
var templateBase = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// template is one normalized demo run: its span rows ordered parents
// first, with times as offsets from the run's first start, and for each
// span the index of its parent (-1 for a root or an orphan).
type template struct {
	spans    []schema.Span
	spanIDs  []uint64 // the template's span ids, parsed
	parent   []int
	offsets  []uint64 // StartNs - run start
	events   [][]uint64
	contents []contentTemplate
	conv     string // the conversation id, "" when none
}

// contentTemplate is a content row of a template span.
type contentTemplate struct {
	row  schema.Content
	span int // index of its span in template.spans
}

// buildTemplates generates demo runs (natural runs when sizes is nil, else
// one run of each size), normalizes them the way ingest does, with the
// price catalog pricer, and turns each into a template.
func buildTemplates(seed int64, sizes []int, natural int, pricer ingest.Pricer, project string) ([]template, error) {
	var runs []demo.Run
	if sizes == nil {
		runs = demo.Generate(demo.Config{Runs: natural, Seed: seed, Start: templateBase})
	}
	for i, n := range sizes {
		runs = append(runs, demo.Generate(demo.Config{Runs: 1, Seed: seed ^ int64(i+1)<<40, Start: templateBase, Spans: n})...)
	}
	if len(runs) == 0 {
		return nil, nil
	}
	body, err := proto.Marshal(demo.ExportRequest(runs))
	if err != nil {
		return nil, fmt.Errorf("encode demo runs: %w", err)
	}
	td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(body)
	if err != nil {
		return nil, fmt.Errorf("decode demo runs: %w", err)
	}
	batch, rejected := ingest.Normalize(td, ingest.Options{
		Project: project, Limits: ingest.DefaultLimits(), Pricer: pricer, Usage: ingest.DefaultUsagePolicy(),
		Now: func() time.Time { return templateBase },
	})
	if rejected.Spans > 0 {
		return nil, fmt.Errorf("normalize demo runs: %d spans rejected: %s", rejected.Spans, rejected.Message)
	}
	byTrace := map[string][]schema.Span{}
	var order []string
	for _, s := range batch.Spans {
		if _, ok := byTrace[s.TraceID]; !ok {
			order = append(order, s.TraceID)
		}
		byTrace[s.TraceID] = append(byTrace[s.TraceID], s)
	}
	contents := map[string][]schema.Content{}
	for _, c := range batch.Contents {
		contents[c.TraceID] = append(contents[c.TraceID], c)
	}
	out := make([]template, 0, len(order))
	for _, id := range order {
		t, err := newTemplate(byTrace[id], contents[id])
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// newTemplate orders a run's spans parents first (depth first, children by
// start time) and records offsets and parent indexes.
func newTemplate(spans []schema.Span, contents []schema.Content) (template, error) {
	children := map[string][]int{}
	index := map[string]int{}
	for i, s := range spans {
		index[s.SpanID] = i
	}
	var roots []int
	for i, s := range spans {
		if _, ok := index[s.ParentSpanID]; s.ParentSpanID == "" || !ok {
			roots = append(roots, i)
			continue
		}
		children[s.ParentSpanID] = append(children[s.ParentSpanID], i)
	}
	byStart := func(ix []int) {
		sort.SliceStable(ix, func(a, b int) bool { return spans[ix[a]].StartNs < spans[ix[b]].StartNs })
	}
	byStart(roots)
	var order []int
	var visit func(i int)
	visit = func(i int) {
		order = append(order, i)
		kids := children[spans[i].SpanID]
		byStart(kids)
		for _, k := range kids {
			visit(k)
		}
	}
	for _, r := range roots {
		visit(r)
	}
	var t template
	var first uint64
	for n, i := range order {
		s := spans[i]
		if n == 0 || s.StartNs < first {
			first = s.StartNs
		}
		if s.ConversationID != "" {
			t.conv = s.ConversationID
		}
	}
	newIndex := make(map[string]int, len(order))
	for n, i := range order {
		s := spans[i]
		id, err := strconv.ParseUint(s.SpanID, 16, 64)
		if err != nil {
			return template{}, fmt.Errorf("template span id %q: %w", s.SpanID, err)
		}
		newIndex[s.SpanID] = n
		p := -1
		if s.ParentSpanID != "" {
			if pi, ok := newIndex[s.ParentSpanID]; ok {
				p = pi
			}
		}
		var ev []uint64
		for _, e := range s.EventTimeNs {
			ev = append(ev, e-first)
		}
		t.spans = append(t.spans, s)
		t.spanIDs = append(t.spanIDs, id)
		t.parent = append(t.parent, p)
		t.offsets = append(t.offsets, s.StartNs-first)
		t.events = append(t.events, ev)
	}
	for _, c := range contents {
		if i, ok := newIndex[c.SpanID]; ok {
			t.contents = append(t.contents, contentTemplate{row: c, span: i})
		}
	}
	return t, nil
}

// clone writes the template's first n spans (all when n >= its size) as a
// run with trace id traceID, span ids XORed with mask, and the first start
// at startNs, appending to spans (and contents when withContent).
func (t *template) clone(spans []schema.Span, contents []schema.Content, n int, traceID, conv string,
	mask uint64, startNs uint64, version uint64, withContent bool) ([]schema.Span, []schema.Content) {
	n = min(n, len(t.spans))
	// One allocation holds every span id of the run; rows slice into it.
	buf := make([]byte, 16*n)
	var raw [8]byte
	for i := 0; i < n; i++ {
		id := t.spanIDs[i] ^ mask
		if id == 0 {
			id = 1
		}
		for b := 0; b < 8; b++ {
			raw[b] = byte(id >> (56 - 8*b))
		}
		hex.Encode(buf[16*i:], raw[:])
	}
	ids := string(buf)
	idOf := func(i int) string { return ids[16*i : 16*i+16] }
	for i := 0; i < n; i++ {
		s := t.spans[i]
		s.TraceID = traceID
		s.SpanID = idOf(i)
		if p := t.parent[i]; p >= 0 {
			s.ParentSpanID = idOf(p)
		}
		shift := startNs + t.offsets[i] - s.StartNs
		s.StartNs += shift
		s.EndNs += shift
		s.Start = time.Unix(int64(s.StartNs/1e9), 0).UTC()
		s.IngestedAt = time.Unix(int64(s.EndNs/1e9)+1, 0).UTC()
		if len(t.events[i]) > 0 {
			ev := make([]uint64, len(t.events[i]))
			for k, off := range t.events[i] {
				ev[k] = startNs + off
			}
			s.EventTimeNs = ev
		}
		if s.ConversationID != "" {
			s.ConversationID = conv
		}
		s.Version = version
		spans = append(spans, s)
	}
	if withContent {
		for _, c := range t.contents {
			if c.span >= n {
				continue
			}
			row := c.row
			row.TraceID = traceID
			row.SpanID = idOf(c.span)
			row.Start = time.Unix(int64((startNs+t.offsets[c.span])/1e9), 0).UTC()
			row.Version = version
			contents = append(contents, row)
		}
	}
	return spans, contents
}
