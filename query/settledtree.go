package query

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"reflect"
	"strings"
	"sync"

	"github.com/tallyhq/tally/attribution"
	"github.com/tallyhq/tally/ingest"
	"github.com/tallyhq/tally/safety"
	"github.com/tallyhq/tally/schema"
)

// A big run's page is answered in part (RunTree, Children), and every part
// needs figures of the whole run: the summary, the landmarks, each node's
// counted flag, subtree figures, retry class and step classes. Computed at
// read time they cost a read of the whole run's outline (50,000 spans: half
// a second). The settler computes them anyway, with the same code, when it
// settles the run; for a run of at least SettledTreeMinSpans spans it keeps
// them beside the run's row (schema.RunRow.Tree), and a part is then read
// from them and from the whole rows of the spans it shows. A row whose spans
// changed since (a late span, a duplicate, a reprice: a newer span version),
// whose tree counts other than the run's stored rows (a span the settler did
// not read, a duplicate delivery not yet merged), whose review ran under
// another safety configuration, or written by a build whose summary or node
// had other fields, is not used: the part is computed from the outline as
// before.

// SettledTreeMinSpans is the least spans of a run whose settled row keeps
// its tree: smaller runs are read whole, or their outline in a few
// milliseconds.
const SettledTreeMinSpans = 1000

// settledTreeFormat leads an encoded tree; a tree of another format is not
// read.
const settledTreeFormat = 1

// settledTreeHead is what a settled tree keeps of the run's detail besides
// its nodes.
type settledTreeHead struct {
	Shape            uint64 // settledShape of the build that wrote it
	Summary          RunSummary
	CostliestSpanID  string
	FirstErrorSpanID string
	CostConfidence   []ingest.Confidence
}

// settledShape fingerprints the Go types a settled tree's head decodes
// into and the usage and cost its nodes encode field by field, so that a
// tree written by a build whose summary or buckets had other fields is not
// read as if it had this build's.
var settledShape = sync.OnceValue(func() uint64 {
	h := fnv.New64a()
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		fmt.Fprintf(h, "%s/%s;", t.String(), t.Kind())
		if seen[t] {
			return
		}
		seen[t] = true
		switch t.Kind() {
		case reflect.Struct:
			for i := range t.NumField() {
				f := t.Field(i)
				fmt.Fprintf(h, "%s %s;", f.Name, f.Tag)
				walk(f.Type)
			}
		case reflect.Pointer, reflect.Slice, reflect.Array:
			walk(t.Elem())
		case reflect.Map:
			walk(t.Key())
			walk(t.Elem())
		}
	}
	walk(reflect.TypeFor[settledTreeHead]())
	walk(reflect.TypeFor[attribution.Usage]())
	walk(reflect.TypeFor[attribution.Cost]())
	return h.Sum64()
})

// Node flags of the encoding.
const (
	treeCounted = 1 << iota
	treeOrphan
	treeUsage
	treeCost
)

// encodeSettledTree encodes d — a whole run's detail with its review applied
// to every node — as a settled tree: the head as JSON, the number of roots,
// then every node breadth-first (roots first, a node's children after the
// nodes before it): its span id, number of children, flags, retry class,
// effect and step status, subtree usage and cost when it has them.
func encodeSettledTree(d *RunDetail) (string, error) {
	head, err := json.Marshal(settledTreeHead{Shape: settledShape(), Summary: d.Summary,
		CostliestSpanID: d.CostliestSpanID, FirstErrorSpanID: d.FirstErrorSpanID, CostConfidence: d.CostConfidence})
	if err != nil {
		return "", fmt.Errorf("encode settled tree: %w", err)
	}
	b := make([]byte, 0, len(head)+64*d.Summary.Spans)
	b = append(b, settledTreeFormat)
	b = binary.AppendUvarint(b, uint64(len(head)))
	b = append(b, head...)
	b = binary.AppendUvarint(b, uint64(len(d.Roots)))
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	order := append([]*SpanNode(nil), d.Roots...)
	for i := 0; i < len(order); i++ {
		n := order[i]
		order = append(order, n.Children...)
		str(n.SpanID)
		b = binary.AppendUvarint(b, uint64(len(n.Children)))
		var flags byte
		if n.Counted {
			flags |= treeCounted
		}
		if n.Orphan {
			flags |= treeOrphan
		}
		if n.SubtreeUsage != nil {
			flags |= treeUsage
		}
		if n.SubtreeCost != nil {
			flags |= treeCost
		}
		b = append(b, flags)
		str(string(n.RetryClass))
		str(string(n.Effect))
		str(string(n.StepStatus))
		if u := n.SubtreeUsage; u != nil {
			for _, v := range []uint64{u.Input, u.CacheRead, u.CacheWrite, u.Output, u.Reasoning} {
				b = binary.AppendUvarint(b, v)
			}
		}
		if c := n.SubtreeCost; c != nil {
			for _, v := range []float64{c.Total, c.Input, c.CacheRead, c.CacheWrite, c.Output} {
				b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
			}
		}
	}
	return string(b), nil
}

// errSettledTree is a settled tree this build cannot read.
var errSettledTree = errors.New("malformed settled tree")

// decodeSettledTree decodes a settled tree into a detail whose nodes hold
// their span id, depth and the whole run's figures only: the rest of a
// node comes from its span's row (SpanNode.setSpan). ok is false for a tree
// of another format or shape.
func decodeSettledTree(enc string) (d *RunDetail, total int, ok bool, err error) {
	if len(enc) == 0 || enc[0] != settledTreeFormat {
		return nil, 0, false, nil
	}
	p := enc[1:]
	uv := func() uint64 {
		v, n := binary.Uvarint([]byte(p[:min(len(p), binary.MaxVarintLen64)]))
		if n <= 0 {
			err = errSettledTree
			p = ""
			return 0
		}
		p = p[n:]
		return v
	}
	str := func() string {
		n := uv()
		if n > uint64(len(p)) {
			err = errSettledTree
			p = ""
			return ""
		}
		s := p[:n]
		p = p[n:]
		return s
	}
	var head settledTreeHead
	if h := str(); err != nil {
		return nil, 0, false, err
	} else if err := json.Unmarshal([]byte(h), &head); err != nil {
		return nil, 0, false, fmt.Errorf("%w: head: %v", errSettledTree, err)
	}
	if head.Shape != settledShape() {
		return nil, 0, false, nil
	}
	d = &RunDetail{Summary: head.Summary, CostliestSpanID: head.CostliestSpanID,
		FirstErrorSpanID: head.FirstErrorSpanID, CostConfidence: head.CostConfidence}
	roots := uv()
	if err != nil || roots > uint64(len(p)) {
		return nil, 0, false, errSettledTree
	}
	// Breadth-first, each node's children are the next nodes read once the
	// roots and the children of the nodes before it are: order[next-1] is
	// the parent of the nodes read now (the roots while next is 0), left
	// how many of its children are still to come, and the capacity of a
	// node's Children its number of children.
	var order []*SpanNode
	next := 0 // the node whose children come next
	left := int(roots)
	for len(p) > 0 && err == nil {
		for left == 0 && next < len(order) {
			left = cap(order[next].Children)
			next++
		}
		if left == 0 {
			return nil, 0, false, errSettledTree
		}
		n := &SpanNode{SpanID: str()}
		kids := uv()
		if kids > uint64(len(p)) {
			return nil, 0, false, errSettledTree
		}
		n.Children = make([]*SpanNode, 0, kids)
		if len(p) == 0 {
			return nil, 0, false, errSettledTree
		}
		flags := p[0]
		p = p[1:]
		n.Counted, n.Orphan = flags&treeCounted != 0, flags&treeOrphan != 0
		n.RetryClass, n.Effect, n.StepStatus = attribution.Class(str()), safety.Effect(str()), safety.Status(str())
		if flags&treeUsage != 0 {
			n.SubtreeUsage = &attribution.Usage{Input: uv(), CacheRead: uv(), CacheWrite: uv(), Output: uv(), Reasoning: uv()}
		}
		if flags&treeCost != 0 {
			if len(p) < 40 {
				return nil, 0, false, errSettledTree
			}
			f := func(i int) float64 { return math.Float64frombits(binary.LittleEndian.Uint64([]byte(p[8*i : 8*i+8]))) }
			n.SubtreeCost = &attribution.Cost{Total: f(0), Input: f(1), CacheRead: f(2), CacheWrite: f(3), Output: f(4)}
			p = p[40:]
		}
		if next == 0 {
			d.Roots = append(d.Roots, n)
		} else {
			parent := order[next-1]
			n.Depth = parent.Depth + 1
			parent.Children = append(parent.Children, n)
		}
		left--
		order = append(order, n)
	}
	if err != nil {
		return nil, 0, false, err
	}
	// Every node given all its children, and nothing after.
	for ; next < len(order); next++ {
		left += cap(order[next].Children)
	}
	if left != 0 || len(d.Roots) != int(roots) {
		return nil, 0, false, errSettledTree
	}
	for _, n := range order {
		if len(n.Children) != cap(n.Children) {
			return nil, 0, false, errSettledTree
		}
	}
	return d, len(order), true, nil
}

// settledTree reads the settled tree of the located run and decodes it: ok
// is false when the run has none that holds for its spans as they are now
// (see the package comment above), and its part is computed from its
// outline.
func (r *core) settledTree(ctx context.Context, project, traceID string, ext runExtent) (d *RunDetail, total int, ok bool, err error) {
	if ext.rows < SettledTreeMinSpans {
		return nil, 0, false, nil
	}
	q, args := settledTreeSQL(r.store, project, traceID, ext)
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, 0, false, fmt.Errorf("read settled tree of run %s: %w", traceID, err)
	}
	defer rows.Close()
	if !rows.Next() {
		return nil, 0, false, rows.Err()
	}
	var enc string
	var maxVersion, review uint64
	var deleted uint8
	if err := rows.Scan(&enc, &maxVersion, &review, &deleted); err != nil {
		return nil, 0, false, fmt.Errorf("read settled tree of run %s: %w", traceID, err)
	}
	if deleted != 0 || enc == "" || maxVersion != ext.maxVersion || review != r.reviewConfig().Digest() {
		return nil, 0, false, nil
	}
	d, total, ok, err = decodeSettledTree(enc)
	if err != nil {
		return nil, 0, false, fmt.Errorf("read settled tree of run %s: %w", traceID, err)
	}
	// Rows the tree does not count: spans the settler did not read, or
	// duplicate deliveries not yet merged (computed from the outline
	// until they are).
	if uint64(total) != ext.rows {
		return nil, 0, false, nil
	}
	return d, total, ok, nil
}

// settledTreeSQL builds settledTree's read: the newest row of the run under
// its start (the first start of its spans, as the settler files it).
func settledTreeSQL(t tables, project, traceID string, ext runExtent) (string, []any) {
	return "SELECT tree, max_version, review, deleted FROM " + t.Table(schema.TableRuns) +
			" PREWHERE project = ? AND start = ? AND trace_id = ? ORDER BY version DESC LIMIT 1",
		[]any{project, ext.lo, strings.ToLower(traceID)}
}
