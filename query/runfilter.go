package query

import (
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tallyhq/tally/support/params"
)

// RunStatus is a run's outcome (RunSummary.Status): RunError when its
// root span ended in error (a run without a root: when its last span to
// end did), else RunOK. Errors inside a run that recovered do not make it
// an error.
type RunStatus string

// The run outcomes.
const (
	RunOK    RunStatus = "ok"
	RunError RunStatus = "error"
)

// ParseRunStatus reads a run outcome filter: "" (any), ok or error.
func ParseRunStatus(s string) (RunStatus, error) {
	switch st := RunStatus(s); st {
	case "", RunOK, RunError:
		return st, nil
	}
	return "", fmt.Errorf("status %q: want %s or %s", s, RunOK, RunError)
}

// RunSort is an order of the run list (RunFilter.Sort): each sorts on a
// whole-run figure, ties broken by trace id, so a page cursor (the figure
// and the trace id of a page's last run) is a stable position under the
// sort.
type RunSort string

// The run list's orders.
const (
	SortStart    RunSort = "start"    // the run's start (the default, newest first)
	SortDuration RunSort = "duration" // end − start
	SortCost     RunSort = "cost"     // total USD, compared in nano-USD
	SortTokens   RunSort = "tokens"   // input (cache included) + output (reasoning included) tokens
	SortErrors   RunSort = "errors"   // spans that ended in error
	SortRetries  RunSort = "retries"  // tool calls classified as retries (RunSummary.ToolRetries)
)

// RunSortOption is an order as the UI offers it.
type RunSortOption struct {
	Sort  RunSort
	Label string
}

// RunSortOptions are the orders the run list sorts by, in the order the
// UI offers them: the one list the API's parser, the CLI and the runs
// page's select read.
func RunSortOptions() []RunSortOption {
	return []RunSortOption{
		{SortStart, "Start"}, {SortDuration, "Duration"}, {SortCost, "Cost"},
		{SortTokens, "Tokens"}, {SortErrors, "Error spans"}, {SortRetries, "Retries"},
	}
}

// ParseRunSort reads an order: one of RunSortOptions, "" for SortStart.
func ParseRunSort(s string) (RunSort, error) {
	if s == "" {
		return SortStart, nil
	}
	var names []string
	for _, o := range RunSortOptions() {
		if string(o.Sort) == s {
			return o.Sort, nil
		}
		names = append(names, string(o.Sort))
	}
	return "", fmt.Errorf("sort %q: want one of %s", s, strings.Join(names, ", "))
}

// SortDir is a list's direction.
type SortDir string

// The directions.
const (
	Desc SortDir = "desc"
	Asc  SortDir = "asc"
)

// ParseSortDir reads a direction: asc or desc, "" for Desc.
func ParseSortDir(s string) (SortDir, error) {
	switch d := SortDir(s); d {
	case "":
		return Desc, nil
	case Asc, Desc:
		return d, nil
	}
	return "", fmt.Errorf("dir %q: want asc or desc", s)
}

// ParseRunFilter parses a run-list request (the API's GET /runs, the UI's
// runs page, tally runs): since, until, agent, model, service, task,
// conversation, tool, status (the run's outcome: ok or error), has_errors
// and has_recovered_errors (true or false), q, min_cost (USD), sort (one of
// RunSortOptions) and dir (asc or desc), cursor and limit. The project is
// the caller's to set.
func ParseRunFilter(q url.Values, now time.Time) (RunFilter, error) {
	f := RunFilter{
		Agent: q.Get("agent"), Model: q.Get("model"), Service: q.Get("service"), Task: q.Get("task"),
		Conversation: q.Get("conversation"), Tool: q.Get("tool"), Search: q.Get("q"), Cursor: q.Get("cursor"),
	}
	var err error
	if f.Since, f.Until, err = params.TimeRange(q.Get("since"), q.Get("until"), now); err != nil {
		return f, err
	}
	if f.Limit, err = params.Limit(q.Get("limit")); err != nil {
		return f, err
	}
	if s := q.Get("min_cost"); s != "" {
		if f.MinCost, err = strconv.ParseFloat(s, 64); err != nil || f.MinCost < 0 || math.IsNaN(f.MinCost) || math.IsInf(f.MinCost, 0) {
			return f, fmt.Errorf("min_cost %q: want a non-negative number of USD", s)
		}
	}
	if f.Status, err = ParseRunStatus(q.Get("status")); err != nil {
		return f, err
	}
	if s := q.Get("sort"); s != "" {
		if f.Sort, err = ParseRunSort(s); err != nil {
			return f, err
		}
	}
	if s := q.Get("dir"); s != "" {
		if f.Dir, err = ParseSortDir(s); err != nil {
			return f, err
		}
	}
	for _, b := range []struct {
		name string
		dst  **bool
	}{{"has_errors", &f.HasErrors}, {"has_recovered_errors", &f.HasRecoveredErrors}} {
		switch v := q.Get(b.name); v {
		case "":
		case "true", "false":
			yes := v == "true"
			*b.dst = &yes
		default:
			return f, fmt.Errorf("%s %q: want true or false", b.name, v)
		}
	}
	return f, nil
}
