package tallytest

import (
	"path/filepath"
	"runtime"
	"testing"

	"github.com/tallyhq/tally/alerts"
)

// BudgetRules loads testdata/budget-rules.yaml: budget_low (run_cost over
// $0.005 in 2h, severity page, with a description and runbook) and
// budget_high (over $0.05 in 2h).
func BudgetRules(t testing.TB) []alerts.Rule {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("tallytest: cannot find its own source directory")
	}
	rules, err := alerts.LoadRules(filepath.Join(filepath.Dir(file), "testdata", "budget-rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return rules
}
