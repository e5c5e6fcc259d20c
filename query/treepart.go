package query

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2"
	"golang.org/x/sync/errgroup"

	"github.com/tallyhq/tally/schema"
)

// A run of tens of thousands of spans is tens of megabytes of JSON, most of
// it attributes and events nobody looks at before expanding a subtree. So a
// big run is answered in parts: its outline (every span's narrow columns:
// ids, times, status, usage, cost) is read whole, so that the summary, the
// counted flags, the subtree figures and the retry classes are the whole
// run's; then the answer keeps a bounded number of nodes — the paths to the
// spans it must show, then the tree breadth-first — and only those get
// their wide columns. Each kept node says what it leaves out below it
// (SpanNode.HiddenChildren, HiddenSpans), and Children answers one span's
// children the same way when the reader expands it.

// TreeOptions bound one answer of a run's tree.
type TreeOptions struct {
	// MaxNodes is the most span nodes the answer holds (0: all). A run with
	// more is answered in part (RunDetail.Partial).
	MaxNodes int
	// MaxSpans is the most spans of the run read to build the tree (0: all):
	// it bounds the server's memory. A run with more is built from its
	// earliest MaxSpans (RunDetail.Truncated), its summary still the whole run's.
	MaxSpans int
	// Focus are span ids the answer holds with all their ancestors, within
	// MaxNodes (a deep link to a span of a big run). The run's costliest
	// span and first error are always focused.
	Focus []string
}

// Partial says how much of a run a partial answer holds.
type Partial struct {
	TotalSpans    int `json:"total_spans"`    // spans in the tree the answer was cut from
	ReturnedSpans int `json:"returned_spans"` // span nodes in the answer
	HiddenRoots   int `json:"hidden_roots,omitempty"`
}

// wideChunk is how many span ids one read of whole rows names
// (ClickHouse's max_query_size is 256 KiB; 4,000 ids are about 80 KB).
const wideChunk = 4000

// RunTree loads one run's summary and span tree within o's bounds. A run of
// at most MaxNodes spans is read whole in one query, like Run. A bigger
// run's part takes the whole run's figures from its settled tree when one
// holds (see SettledTreeMinSpans), else from its outline.
func (r TreeReader) RunTree(ctx context.Context, project, traceID string, o TreeOptions) (*RunDetail, error) {
	return r.runTree(ctx, project, traceID, o, true)
}

// runTree is RunTree, reading no settled tree unless settled is true.
func (r *core) runTree(ctx context.Context, project, traceID string, o TreeOptions, settled bool) (*RunDetail, error) {
	if o.MaxNodes <= 0 {
		return TreeReader{r}.RunWithin(ctx, project, traceID, o.MaxSpans)
	}
	ext, err := r.locate(ctx, project, traceID)
	if err != nil {
		return nil, err
	}
	if ext.rows == 0 {
		return nil, ErrNotFound
	}
	if ext.rows <= uint64(o.MaxNodes) && (o.MaxSpans <= 0 || ext.rows <= uint64(o.MaxSpans)) {
		return r.readWhole(ctx, project, traceID, ext, settled)
	}
	d, spans, total, err := r.wholeFigures(ctx, project, traceID, ext, o.MaxSpans, settled)
	if err != nil {
		return nil, err
	}
	pins := append([]string{d.CostliestSpanID, d.FirstErrorSpanID}, o.Focus...)
	roots, kept := prune(d.Roots, o.MaxNodes, pins)
	if err := r.fillRows(ctx, project, traceID, ext, kept); err != nil {
		return nil, err
	}
	if len(kept) < total {
		d.Partial = &Partial{TotalSpans: total, ReturnedSpans: len(kept), HiddenRoots: len(d.Roots) - len(roots)}
	}
	d.Roots = roots
	if spans != nil { // a settled tree holds its review
		if err := r.reviewDetail(ctx, project, d, spans); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// readWhole is the detail of a located run read whole (every column of
// every span). A run that may have a settled tree (SettledTreeMinSpans)
// reads it beside its spans, sparing the figures' computation and the
// review's content read when it holds; any other reads its recorded tool
// content beside its spans, within the located extent (content rows carry
// their span's start). Either way the two statements cost the longer of
// them, not the sum.
func (r *core) readWhole(ctx context.Context, project, traceID string, ext runExtent, settled bool) (*RunDetail, error) {
	withTree := settled && ext.rows >= SettledTreeMinSpans
	ids := []string{strings.ToLower(traceID)}
	var (
		spans   []schema.Span
		content *reviewedContent
		tree    *RunDetail
		total   int
		held    bool
	)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		spans, _, err = r.readExtent(gctx, project, traceID, schema.SpanColumnsAll(), ext, 0)
		return err
	})
	if withTree {
		g.Go(func() (err error) {
			tree, total, held, err = r.settledTree(gctx, project, traceID, ext)
			return err
		})
	} else {
		g.Go(func() (err error) {
			content, err = r.reviewContent(gctx, project, ids, ext.lo, ext.hi, r.latestRead(ext))
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if len(spans) == 0 {
		return nil, ErrNotFound
	}
	if withTree {
		if held && total == len(spans) && fillTree(tree, spans) {
			return tree, nil
		}
		var err error
		if content, err = r.reviewContent(ctx, project, ids, ext.lo, ext.hi, r.latestRead(ext)); err != nil {
			return nil, err
		}
	}
	d := runDetail(spans)
	r.applyContentReview(project, d, spans, content)
	return d, nil
}

// fillTree puts the spans read whole on the nodes of a run's settled tree
// d: false when the tree's spans are not the spans read.
func fillTree(d *RunDetail, spans []schema.Span) bool {
	byID := nodesByID(d.Roots)
	for i := range spans {
		n := byID[spans[i].SpanID]
		if n == nil {
			return false
		}
		n.setSpan(&spans[i])
		delete(byID, spans[i].SpanID)
	}
	return len(byID) == 0
}

// wholeFigures is a big run's detail with the whole run's figures on every
// node, and the number of nodes: from its settled tree when settled is true
// and one holds (spans nil; the nodes' step classes and the summary's
// review set), else from its outline (spans; not yet reviewed).
func (r *core) wholeFigures(ctx context.Context, project, traceID string, ext runExtent, maxSpans int, settled bool) (d *RunDetail, spans []schema.Span, total int, err error) {
	if settled {
		d, total, ok, err := r.settledTree(ctx, project, traceID, ext)
		if err != nil {
			return nil, nil, 0, err
		}
		if ok && (maxSpans <= 0 || total <= maxSpans) {
			return d, nil, total, nil
		}
	}
	d, spans, err = r.outline(ctx, project, traceID, ext, maxSpans)
	if err != nil {
		return nil, nil, 0, err
	}
	return d, spans, len(spans), nil
}

// outline reads a run's outline (at most maxSpans spans, the earliest) and
// builds its detail: tree, counted flags, subtree figures, retry classes,
// and the whole run's summary.
func (r *core) outline(ctx context.Context, project, traceID string, ext runExtent, maxSpans int) (*RunDetail, []schema.Span, error) {
	spans, more, err := r.readExtent(ctx, project, traceID, schema.SpanOutline(reviewOutline()), ext, maxSpans)
	if err != nil {
		return nil, nil, err
	}
	if len(spans) == 0 {
		return nil, nil, ErrNotFound
	}
	d := runDetail(spans)
	if more {
		if err := r.summarizeWhole(ctx, project, traceID, d, spans); err != nil {
			return nil, nil, err
		}
	}
	return d, spans, nil
}

// ChildrenOptions bound one answer of a span's children.
type ChildrenOptions struct {
	Offset   int // the first child answered, in start order
	Limit    int // the most children answered (0: up to MaxNodes)
	MaxNodes int // the most span nodes in the answer, the children included (0: all)
	MaxSpans int // as TreeOptions.MaxSpans
}

// ChildrenPart is a page of one span's children, each with as much of its
// subtree as the answer's MaxNodes holds.
type ChildrenPart struct {
	TraceID       string      `json:"trace_id"`
	SpanID        string      `json:"span_id"`
	ChildrenTotal int         `json:"children_total"`
	Offset        int         `json:"offset"`
	NextOffset    *int        `json:"next_offset"` // null: no children after this page
	Children      []*SpanNode `json:"children"`
	Truncated     *Truncation `json:"truncated,omitempty"`
}

// Children answers the children of one span of a run, from o.Offset, with
// their subtrees breadth-first within o.MaxNodes; their figures (counted
// flags, subtree cost, retry classes) are those of the whole run's tree.
// A span the run does not hold is ErrNotFound.
func (r TreeReader) Children(ctx context.Context, project, traceID, spanID string, o ChildrenOptions) (*ChildrenPart, error) {
	return r.children(ctx, project, traceID, spanID, o, true)
}

// children is Children, reading no settled tree unless settled is true.
func (r *core) children(ctx context.Context, project, traceID, spanID string, o ChildrenOptions, settled bool) (*ChildrenPart, error) {
	ext, err := r.locate(ctx, project, traceID)
	if err != nil {
		return nil, err
	}
	if ext.rows == 0 {
		return nil, ErrNotFound
	}
	d, spans, _, err := r.wholeFigures(ctx, project, traceID, ext, o.MaxSpans, settled)
	if err != nil {
		return nil, err
	}
	var parent *SpanNode
	stack := append([]*SpanNode(nil), d.Roots...)
	for len(stack) > 0 && parent == nil {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n.SpanID == spanID {
			parent = n
		}
		stack = append(stack, n.Children...)
	}
	if parent == nil {
		return nil, ErrNotFound
	}
	all := parent.Children
	part := &ChildrenPart{TraceID: strings.ToLower(traceID), SpanID: spanID, ChildrenTotal: len(all),
		Offset: min(max(o.Offset, 0), len(all)), Truncated: d.Truncated}
	limit := o.Limit
	if o.MaxNodes > 0 && (limit <= 0 || limit > o.MaxNodes) {
		limit = o.MaxNodes
	}
	page := all[part.Offset:]
	if limit > 0 && len(page) > limit {
		page = page[:limit]
		next := part.Offset + limit
		part.NextOffset = &next
	}
	budget := o.MaxNodes
	if budget <= 0 {
		budget = math.MaxInt
	}
	kids, kept := prune(page, max(budget, len(page)), nil)
	if err := r.fillRows(ctx, project, traceID, ext, kept); err != nil {
		return nil, err
	}
	if spans != nil {
		r.stepFacts(project, d.Summary, kids, spans)
	}
	part.Children = kids
	if part.Children == nil {
		part.Children = []*SpanNode{}
	}
	return part, nil
}

// prune keeps at most max nodes of the trees under roots, and returns the
// kept roots and every kept node. The paths from a root to each pinned span
// come first (a path that does not fit is skipped), then the trees
// breadth-first, so the top levels are whole before anything deeper. A kept
// node's Children become its kept children, and HiddenChildren and
// HiddenSpans say what it lost. Nodes are changed in place.
func prune(roots []*SpanNode, max int, pins []string) (keptRoots, kept []*SpanNode) {
	order := append([]*SpanNode(nil), roots...)
	parent := map[*SpanNode]*SpanNode{}
	for i := 0; i < len(order); i++ {
		for _, c := range order[i].Children {
			parent[c] = order[i]
			order = append(order, c)
		}
	}
	keep := make(map[*SpanNode]bool, min(max, len(order)))
	if len(pins) > 0 {
		want := map[string]bool{}
		for _, id := range pins {
			if id != "" {
				want[id] = true
			}
		}
		for _, n := range order {
			if !want[n.SpanID] {
				continue
			}
			var path []*SpanNode
			for m := n; m != nil && !keep[m]; m = parent[m] {
				path = append(path, m)
			}
			if len(keep)+len(path) <= max {
				for _, m := range path {
					keep[m] = true
				}
			}
		}
	}
	for _, n := range order {
		if len(keep) >= max {
			break
		}
		// Breadth-first: a parent comes before its children, so a child of
		// a node left out is left out too.
		if p := parent[n]; p == nil || keep[p] {
			keep[n] = true
		}
	}
	// Spans under each node, and how many of them are kept, children first.
	size := make(map[*SpanNode]int, len(order))
	keptBelow := make(map[*SpanNode]int, len(keep))
	for i := len(order) - 1; i >= 0; i-- {
		n := order[i]
		s, k := 0, 0
		for _, c := range n.Children {
			s += size[c] + 1
			if keep[c] {
				k += keptBelow[c] + 1
			}
		}
		size[n], keptBelow[n] = s, k
	}
	for _, n := range order {
		if !keep[n] {
			continue
		}
		kept = append(kept, n)
		kids := make([]*SpanNode, 0, len(n.Children))
		for _, c := range n.Children {
			if keep[c] {
				kids = append(kids, c)
			}
		}
		n.HiddenChildren, n.HiddenSpans = len(n.Children)-len(kids), size[n]-keptBelow[n]
		n.Children = kids
	}
	for _, n := range roots {
		if keep[n] {
			keptRoots = append(keptRoots, n)
		}
	}
	return keptRoots, kept
}

// fillRows reads the whole rows of the given nodes' spans and sets each
// node's own fields from its row (SpanNode.setSpan): the wide columns an
// outline leaves out, and all of them for a node of a settled tree.
func (r *core) fillRows(ctx context.Context, project, traceID string, ext runExtent, nodes []*SpanNode) error {
	byID := make(map[string]*SpanNode, len(nodes))
	ids := make([]string, 0, len(nodes))
	for _, n := range nodes {
		byID[n.SpanID] = n
		ids = append(ids, n.SpanID)
	}
	for len(ids) > 0 {
		chunk := ids[:min(wideChunk, len(ids))]
		ids = ids[len(chunk):]
		set := clickhouse.GroupSet{Value: make([]any, len(chunk))}
		for i, id := range chunk {
			set.Value[i] = id
		}
		q, args := fillWideSQL(r.store, project, traceID, set, ext)
		rows, err := r.store.Conn().Query(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("load spans of run %s: %w", traceID, err)
		}
		spans, err := schema.ScanSpans(rows)
		rows.Close()
		if err != nil {
			return fmt.Errorf("load spans of run %s: %w", traceID, err)
		}
		for i := range spans {
			if n := byID[spans[i].SpanID]; n != nil {
				n.setSpan(&spans[i])
			}
		}
	}
	return nil
}

// fillWideSQL builds fillRows' statement: the whole rows of the located
// run's spans in set.
func fillWideSQL(t tables, project, traceID string, set clickhouse.GroupSet, ext runExtent) (string, []any) {
	q := "SELECT " + schema.SpanSelectList() + " FROM " + final(t.Table(schema.TableSpans)) +
		" PREWHERE project = ? AND trace_id = ? AND span_id IN ? WHERE start >= ? AND start <= ?"
	return q, []any{project, strings.ToLower(traceID), set, ext.lo, ext.hi}
}
