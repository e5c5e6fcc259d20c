package main

import (
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/cobra"
)

// newProbeCmd is `tally probe`: GET a health endpoint of a running tally and
// exit 0 on 200, 1 otherwise. The container image has no shell or curl
// (distroless), so its HEALTHCHECK and docker-compose healthchecks run this.
func newProbeCmd() *cobra.Command {
	var (
		url     string
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "probe [healthz|readyz]",
		Short: "Check a running tally's /healthz (default) or /readyz; exit 1 unless it answers 200",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			endpoint := "healthz"
			if len(args) == 1 {
				endpoint = args[0]
			}
			if endpoint != "healthz" && endpoint != "readyz" {
				return fmt.Errorf("probe %q: want healthz or readyz", endpoint)
			}
			client := &http.Client{Timeout: timeout}
			resp, err := client.Get(url + "/" + endpoint)
			if err != nil {
				return &exitError{code: 1, msg: fmt.Sprintf("probe %s: %v", endpoint, err)}
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return &exitError{code: 1, msg: fmt.Sprintf("probe %s: %s", endpoint, resp.Status)}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s ok\n", endpoint)
			return nil
		},
	}
	cmd.Flags().StringVar(&url, "url", "http://127.0.0.1:4318", "base URL of the tally to probe")
	cmd.Flags().DurationVar(&timeout, "timeout", 3*time.Second, "give up after this long")
	return cmd
}
