package main

import (
	"os"
	"testing"

	"github.com/tallyhq/tally/internal/testenv"
)

// TestMain stops the ClickHouse server the package's integration tests
// share; with countEmbeddedEnv set, the binary is embedded_test.go's helper.
func TestMain(m *testing.M) {
	if dir := os.Getenv(countEmbeddedEnv); dir != "" {
		os.Exit(countEmbeddedMain(dir))
	}
	testenv.Main(m)
}
