package query

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/tallyhq/tally/schema"
)

// TestInStartOrder: the in-place reordering gives what a plain stable sort
// of copies gives, for runs of every size up to a few hundred spans, with
// many spans sharing a start (ties broken by span id) and the rows in
// random order, as LIMIT 1 BY leaves them.
func TestInStartOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 3, 7, 64, 501} {
		spans := make([]schema.Span, n)
		for i := range spans {
			spans[i] = schema.Span{SpanID: fmt.Sprintf("%016x", rng.Uint64()), StartNs: uint64(rng.IntN(max(1, n/4))), Name: fmt.Sprint(i)}
		}
		want := slices.Clone(spans)
		slices.SortStableFunc(want, func(a, b schema.Span) int {
			return cmp.Or(cmp.Compare(a.StartNs, b.StartNs), strings.Compare(a.SpanID, b.SpanID))
		})
		got := slices.Clone(spans)
		inStartOrder(got)
		for i := range want {
			if got[i].SpanID != want[i].SpanID || got[i].Name != want[i].Name {
				t.Fatalf("%d spans: position %d holds %s (%s), want %s (%s)", n, i, got[i].SpanID, got[i].Name, want[i].SpanID, want[i].Name)
			}
		}
	}
}
