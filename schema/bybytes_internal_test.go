package schema

import (
	"reflect"
	"slices"
	"testing"
)

// TestByBytes checks where a run of rows closes, at the edges of the limit:
// rows are their own sizes.
func TestByBytes(t *testing.T) {
	size := func(r *int64) int64 { return *r }
	for _, tc := range []struct {
		name  string
		rows  []int64
		limit int64
		want  [][]int64
	}{
		{"none", nil, 10, nil},
		{"under the limit: one run", []int64{3, 3, 3}, 10, [][]int64{{3, 3, 3}}},
		{"exactly the limit fits", []int64{4, 6, 1}, 10, [][]int64{{4, 6}, {1}}},
		{"one byte over starts the next", []int64{4, 5, 2}, 10, [][]int64{{4, 5}, {2}}},
		{"a row of the limit fits alone", []int64{1, 10, 1}, 10, [][]int64{{1}, {10}, {1}}},
		{"a row over the limit is a run of its own", []int64{25, 25}, 10, [][]int64{{25}, {25}}},
		{"limit 1: a run a row", []int64{1, 1, 1}, 1, [][]int64{{1}, {1}, {1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got [][]int64
			for b := range ByBytes(tc.rows, size, tc.limit) {
				got = append(got, slices.Clone(b))
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ByBytes(%v, limit %d) = %v, want %v", tc.rows, tc.limit, got, tc.want)
			}
		})
	}
}

// TestDataBytesCountsEveryField sets each string and slice field of a Span
// and a Content in turn and checks DataBytes grows by what was set: a field
// added to a row and left out of DataBytes would let batches and blocks
// outgrow their bounds.
func TestDataBytesCountsEveryField(t *testing.T) {
	check := func(t *testing.T, zero any, data func(any) int64) {
		typ := reflect.TypeOf(zero).Elem()
		base := data(zero)
		for i := range typ.NumField() {
			f := typ.Field(i)
			row := reflect.New(typ)
			var want int64
			switch {
			case f.Type.Kind() == reflect.String:
				row.Elem().Field(i).SetString("abc")
				want = 3
			case f.Type == reflect.TypeFor[[]string]():
				row.Elem().Field(i).Set(reflect.ValueOf([]string{"ab", "c"}))
				want = 3
			case f.Type == reflect.TypeFor[[]uint64]():
				row.Elem().Field(i).Set(reflect.ValueOf([]uint64{1, 2}))
				want = 16
			default:
				continue
			}
			if got := data(row.Interface()) - base; got != want {
				t.Errorf("%s.%s: DataBytes grew by %d, want %d", typ.Name(), f.Name, got, want)
			}
		}
	}
	check(t, &Span{}, func(r any) int64 { return r.(*Span).DataBytes() })
	check(t, &Content{}, func(r any) int64 { return r.(*Content).DataBytes() })
}
