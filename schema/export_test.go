package schema

import (
	"context"
	"fmt"
)

// ApplyMigration runs migration version on s again, as Migrate would on a
// store recorded below it (for the upgrade tests).
func ApplyMigration(ctx context.Context, s *Store, version int) error {
	for _, m := range migrations {
		if m.version == version {
			return s.apply(ctx, m)
		}
	}
	return fmt.Errorf("no migration %d", version)
}

// SpanFactsV5 is the facts view's columns before migration 8, so a test
// can put a store back in its shape before it.
var SpanFactsV5 = spanFactNamesV5

// SpanFactsViewStatements are the statements creating the facts view over
// names (without copying rows).
func SpanFactsViewStatements(s *Store, names []string) []string {
	return s.spanFactsView(names, "0")[:1]
}

// ViewSpanFacts is the facts view's name.
const ViewSpanFacts = viewSpanFacts

// SpanFactsV8 is the facts view's columns from migration 8 to 19 (the
// end stored), so a test can put a store back in its shape before 20.
var SpanFactsV8 = spanFactNames
