package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tallyhq/tally/tools/demo"
	"github.com/tallyhq/tally/tools/loadgen"
)

// ingestFlags adds --endpoint, --header and --key to a command that sends
// OTLP to tally. The returned function applies tally.yaml and builds the
// request headers from --header and --key.
func ingestFlags(cmd *cobra.Command, endpoint *string) func() (map[string]string, error) {
	var (
		headers []string
		key     string
	)
	apply := configFlag(cmd)
	fs := cmd.Flags()
	fs.StringVar(endpoint, "endpoint", "http://127.0.0.1:4318", "tally OTLP/HTTP base URL")
	fs.StringSliceVar(&headers, "header", nil, "extra request header Key=Value (repeatable)")
	fs.StringVar(&key, "key", "", "API key with ingest scope")
	return func() (map[string]string, error) {
		if err := apply(); err != nil {
			return nil, err
		}
		return headerMap(headers, key)
	}
}

// headerMap parses repeated "Key=Value" flags (like OTEL_EXPORTER_OTLP_HEADERS)
// and adds key as a bearer Authorization header.
func headerMap(pairs []string, key string) (map[string]string, error) {
	h := map[string]string{}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			return nil, fmt.Errorf("--header %q: want Key=Value", p)
		}
		h[k] = v
	}
	if key != "" {
		h["Authorization"] = "Bearer " + key
	}
	return h, nil
}

func newDemoCmd() *cobra.Command {
	var (
		cfg     demo.Config
		endTime string
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Send realistic agent runs through OTLP with the OpenTelemetry Go SDK",
		Long: `Demo sends runs that look like real agents: a planner invoking sub-agents,
chat calls to Anthropic, OpenAI and Gemini models with prompt caching (and one
agent whose cache never hits), tool calls with realistic latencies, a flaky
tool that fails and is retried, tool arguments and results. A few runs carry
safety incidents for the Reliability page (a refund issued twice, a tool the
model was not offered, a merge without approval). From --runs 20 up (with
--spans 0), 30 evaluation runs follow: two cases per task tried three times,
and a worse second version of code_fix, whose verdicts are then posted as
outcomes (POST /api/v1/runs/{id}/outcomes) for the Tasks and Compare pages.
Deterministic with --seed.`,
	}
	headers := ingestFlags(cmd, &cfg.Endpoint)
	fs := cmd.Flags()
	fs.IntVar(&cfg.Runs, "runs", 40, "runs to send")
	fs.Int64Var(&cfg.Seed, "seed", 1, "random seed: the same seed sends the same runs")
	fs.Float64Var(&cfg.Rate, "rate", 0, "runs per second (0: as fast as possible)")
	fs.BoolVar(&cfg.Gzip, "gzip", true, "gzip requests")
	fs.BoolVar(&cfg.JSON, "json", false, "send OTLP/JSON instead of protobuf")
	fs.IntVar(&cfg.Spans, "spans", 0, "exact spans per run (0: natural sizes of 10–60)")
	fs.StringVar(&endTime, "end", "", "RFC 3339 time the traffic ends at (default: now)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		h, err := headers()
		if err != nil {
			return err
		}
		cfg.Headers = h
		if endTime != "" {
			t, err := time.Parse(time.RFC3339, endTime)
			if err != nil {
				return fmt.Errorf("--end: %w", err)
			}
			cfg.Start = t
		}
		sum, err := demo.Send(cmd.Context(), cfg)
		if err != nil {
			return err
		}
		fmt.Fprintln(cmd.OutOrStdout(), sum.String())
		return nil
	}
	return cmd
}

func newLoadgenCmd() *cobra.Command {
	var cfg loadgen.Config
	cmd := &cobra.Command{
		Use:   "loadgen",
		Short: "Send OTLP protobuf load of realistic gen_ai spans and report throughput and latency",
	}
	headers := ingestFlags(cmd, &cfg.Endpoint)
	fs := cmd.Flags()
	fs.IntVar(&cfg.RequestSpans, "request-spans", loadgen.DefaultRequestSpans, "spans per request")
	fs.IntVar(&cfg.Concurrency, "concurrency", loadgen.DefaultConcurrency, "concurrent senders")
	fs.Float64Var(&cfg.Rate, "rate", 0, "requests per second in total (0: as fast as acknowledged)")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "stop after this long")
	fs.IntVar(&cfg.Requests, "requests", 0, "stop after this many requests (0: duration only)")
	fs.BoolVar(&cfg.Gzip, "gzip", false, "gzip requests")
	fs.Int64Var(&cfg.Seed, "seed", 1, "random seed")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		h, err := headers()
		if err != nil {
			return err
		}
		cfg.Headers = h
		res, err := loadgen.Run(cmd.Context(), cfg)
		if err != nil {
			return err
		}
		fmt.Fprintln(cmd.OutOrStdout(), res.String())
		return nil
	}
	return cmd
}
