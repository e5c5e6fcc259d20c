package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/tallyhq/tally/lease"
)

func init() {
	serveFlagHooks = append(serveFlagHooks, registerClusterFlags)
}

// alertsEvaluatorLease is the lease the alert evaluator runs under.
const alertsEvaluatorLease = "alerts-evaluator"

// registerClusterFlags adds the flags of running several tally replicas
// against one ClickHouse (server or cluster).
func registerClusterFlags(fs *pflag.FlagSet) {
	fs.String("alerts-evaluator", "auto",
		"which replicas evaluate alerts: auto (the one holding a lease in ClickHouse), on (this one, always), off (never)")
	fs.String("replica-id", "", "this replica's name in the alert evaluator lease; default <hostname>-<random>")
}

// evaluatorJob wraps the alert evaluator's job according to
// --alerts-evaluator: with auto it runs only while this replica holds the
// lease, so that one replica of a deployment evaluates and notifies; on runs
// it unconditionally (one replica, or a dedicated evaluator); off never.
func evaluatorJob(env *serveEnv, job func(ctx context.Context)) (func(ctx context.Context), error) {
	mode, err := env.flags.GetString("alerts-evaluator")
	if err != nil {
		return nil, err
	}
	switch mode {
	case "on":
		return job, nil
	case "off":
		env.log.Info("alert evaluation off on this replica (--alerts-evaluator=off)")
		return func(context.Context) {}, nil
	case "auto":
	default:
		return nil, fmt.Errorf("--alerts-evaluator %q: want auto, on or off", mode)
	}
	holder, err := env.flags.GetString("replica-id")
	if err != nil {
		return nil, err
	}
	if holder == "" {
		if holder, err = defaultReplicaID(); err != nil {
			return nil, err
		}
	}
	l, err := lease.New(env.store, lease.Config{Name: alertsEvaluatorLease, Holder: holder,
		Logger: env.log.With("component", "lease")})
	if err != nil {
		return nil, err
	}
	env.log.Info("alert evaluation under a lease: one replica evaluates at a time", "lease", alertsEvaluatorLease,
		"holder", holder, "ttl", lease.DefaultTTL)
	return func(ctx context.Context) { l.Run(ctx, job) }, nil
}

// defaultReplicaID is the host name with a random suffix, unique per process.
func defaultReplicaID() (string, error) {
	host, err := os.Hostname()
	if err != nil {
		host = "tally"
	}
	suffix := make([]byte, 4)
	if _, err := rand.Read(suffix); err != nil {
		return "", fmt.Errorf("replica id: %w", err)
	}
	return host + "-" + hex.EncodeToString(suffix), nil
}
