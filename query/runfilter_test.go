package query_test

import (
	"net/url"
	"testing"
	"time"

	"github.com/tallyhq/tally/query"
)

// TestParseRunFilter: what a run-list request may ask for, and what is
// refused; the values parsed.
func TestParseRunFilter(t *testing.T) {
	now := time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		query string
		ok    bool
	}{
		{"", true},
		{"status=ok", true},
		{"status=error", true},
		{"status=recovered", false},
		{"has_errors=true", true},
		{"has_errors=false", true},
		{"has_errors=1", false},
		{"has_recovered_errors=true", true},
		{"has_recovered_errors=yes", false},
		{"sort=start", true},
		{"sort=duration&dir=asc", true},
		{"sort=cost&dir=desc", true},
		{"sort=tokens", true},
		{"sort=errors", true},
		{"sort=retries", true},
		{"sort=task", false},
		{"sort=Cost", false},
		{"dir=up", false},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			q, err := url.ParseQuery(tt.query)
			if err != nil {
				t.Fatal(err)
			}
			_, err = query.ParseRunFilter(q, now)
			if (err == nil) != tt.ok {
				t.Fatalf("ParseRunFilter(%q) error %v, want ok %v", tt.query, err, tt.ok)
			}
		})
	}
}

func TestParseRunFilterValues(t *testing.T) {
	now := time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC)
	q, err := url.ParseQuery("status=error&has_errors=false&has_recovered_errors=true&sort=cost&dir=asc&min_cost=0.5&since=2h")
	if err != nil {
		t.Fatal(err)
	}
	f, err := query.ParseRunFilter(q, now)
	if err != nil {
		t.Fatal(err)
	}
	if f.Status != query.RunError || f.HasErrors == nil || *f.HasErrors || f.HasRecoveredErrors == nil || !*f.HasRecoveredErrors ||
		f.Sort != query.SortCost || f.Dir != query.Asc || f.MinCost != 0.5 || !f.Since.Equal(now.Add(-2*time.Hour)) {
		t.Errorf("parsed %+v", f)
	}
	empty, err := query.ParseRunFilter(url.Values{}, now)
	if err != nil || empty.Status != "" || empty.HasErrors != nil || empty.HasRecoveredErrors != nil || empty.Sort != "" || empty.Dir != "" {
		t.Errorf("empty request parsed as %+v, %v: want no filter", empty, err)
	}
	// Every order offered parses to itself; "" is the start.
	for _, o := range query.RunSortOptions() {
		if s, err := query.ParseRunSort(string(o.Sort)); err != nil || s != o.Sort {
			t.Errorf("ParseRunSort(%q) = %q, %v", o.Sort, s, err)
		}
	}
	if s, err := query.ParseRunSort(""); err != nil || s != query.SortStart {
		t.Errorf("ParseRunSort(\"\") = %q, %v; want start", s, err)
	}
}
