package durable

import (
	"testing"

	"github.com/tallyhq/tally/internal/testenv"
)

// TestMain stops the ClickHouse server the package's integration tests share.
func TestMain(m *testing.M) { testenv.Main(m) }
