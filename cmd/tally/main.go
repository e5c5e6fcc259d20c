// Command tally is the tally backend and its command-line client: one binary
// whose subcommands serve, migrate, generate demo traffic and query a server.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// version is stamped by the build (-ldflags "-X main.version=…").
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCmd().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "tally:", err)
		os.Exit(exitCode(err))
	}
}

// exitError carries a specific exit status (e.g. 1 from `alerts check` when
// something would fire) without printing anything more.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func exitCode(err error) int {
	if e, ok := err.(*exitError); ok {
		return e.code
	}
	return 2
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "tally",
		Short:         "Observability and cost attribution for AI agents (OTLP → ClickHouse)",
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newServeCmd(),
		newMigrateCmd(),
		newDemoCmd(),
		newLoadgenCmd(),
		newRunsCmd(),
		newSearchCmd(),
		newRunCmd(),
		newExplainCmd(),
		newCostCmd(),
		newCacheCmd(),
		newRepriceCmd(),
		newAlertsCmd(),
		newOutcomeCmd(),
		newTasksCmd(),
		newVersionsCmd(),
		newCompareCmd(),
		newSignalsCmd(),
		newDeadLetterCmd(),
		newCapsCmd(),
		newRetentionCmd(),
		newReplayCmd(),
		newKeysCmd(),
		newProbeCmd(),
	)
	root.AddCommand(newDocsCmd(root))
	return root
}
