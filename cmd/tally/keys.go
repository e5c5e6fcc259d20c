package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tallyhq/tally/support/auth"
)

func newKeysCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "Create, list and revoke API keys (stored hashed in ClickHouse)",
		Long: `API keys authenticate agents (scope ingest: send spans), people and tools
(scope read: the API, the UI and the CLI) and Prometheus (scope metrics:
scrape /metrics). A key belongs to one project and sees only that project's
data, except that /metrics covers every project.

Keys created here are stored (as SHA-256 hashes) in ClickHouse and shared by
every tally server, which reloads them every --auth-refresh (10s): a created
or revoked key takes effect within that interval. Static keys can instead be
given to tally serve as --auth-key project:scopes:sha256 (see keys hash).`,
	}
	cmd.AddCommand(newKeysCreateCmd(), newKeysListCmd(), newKeysRevokeCmd(), newKeysHashCmd())
	return cmd
}

// keysStoreCmd is a keys subcommand that talks to ClickHouse.
func keysStoreCmd(use, short string, args cobra.PositionalArgs) (*cobra.Command, *storeFlags, func() error) {
	cmd := &cobra.Command{Use: use, Short: short, Args: args}
	apply := configFlag(cmd)
	st := &storeFlags{}
	st.register(cmd.Flags(), nil)
	return cmd, st, apply
}

func newKeysCreateCmd() *cobra.Command {
	var project, scopes, name string
	var static bool
	cmd, st, apply := keysStoreCmd("create", "Create a key and print it (once: only its hash is kept)", cobra.NoArgs)
	fs := cmd.Flags()
	fs.StringVar(&project, "project", "", "project the key belongs to (required)")
	fs.StringVar(&scopes, "scope", "", auth.JoinScopes(auth.Scopes(), ", ")+", or several comma-separated (required; metrics scrapes /metrics: every project's figures)")
	fs.StringVar(&name, "name", "", "what the key is for (shown by keys list)")
	fs.BoolVar(&static, "static", false, "store nothing: print the key and its --auth-key spec for tally.yaml")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := apply(); err != nil {
			return err
		}
		if project == "" || scopes == "" {
			return errors.New("--project and --scope are required")
		}
		if err := auth.ValidProject(project); err != nil {
			return err
		}
		sc, err := auth.ParseScopes(scopes)
		if err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		if static {
			plaintext, err := auth.Generate(project)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(out, "key:      %s\nauth-key: %s:%s:%s\n\nGive the key to its user now: it is not shown again. Put the auth-key line\n(the hash, not the key) in tally.yaml under auth: {key: [...]} or pass --auth-key.\n",
				plaintext, project, auth.JoinScopes(sc, "+"), auth.Hash(plaintext))
			return err
		}
		store, err := openWithRetry(cmd.Context(), st, newLogger("warn"))
		if err != nil {
			return err
		}
		defer store.Close()
		if err := store.Migrate(cmd.Context()); err != nil {
			return err
		}
		k, plaintext, err := auth.NewStore(store).Create(cmd.Context(), project, sc, name)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "id:      %s\nproject: %s\nscopes:  %s\nname:    %s\nkey:     %s\n\nGive the key to its user now: it is not shown again. Servers accept it within\ntheir --auth-refresh interval (10s by default).\n",
			k.ID, k.Project, auth.JoinScopes(k.Scopes, ","), k.Name, plaintext)
		return err
	}
	return cmd
}

func newKeysListCmd() *cobra.Command {
	var asJSON bool
	cmd, st, apply := keysStoreCmd("list", "List managed keys (never the keys themselves)", cobra.NoArgs)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := apply(); err != nil {
			return err
		}
		store, err := openWithRetry(cmd.Context(), st, newLogger("warn"))
		if err != nil {
			return err
		}
		defer store.Close()
		keys, err := auth.NewStore(store).List(cmd.Context())
		if err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		if asJSON {
			enc := json.NewEncoder(out)
			enc.SetIndent("", "  ")
			if keys == nil {
				keys = []auth.Key{}
			}
			return enc.Encode(keys)
		}
		tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tPROJECT\tSCOPES\tNAME\tCREATED\tREVOKED")
		for _, k := range keys {
			revoked := "-"
			if k.Revoked() {
				revoked = k.RevokedAt.Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Project, auth.JoinScopes(k.Scopes, ","),
				orDash(k.Name), k.CreatedAt.Format(time.RFC3339), revoked)
		}
		return tw.Flush()
	}
	return cmd
}

func newKeysRevokeCmd() *cobra.Command {
	cmd, st, apply := keysStoreCmd("revoke ID", "Revoke a key: servers refuse it within --auth-refresh", cobra.ExactArgs(1))
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := apply(); err != nil {
			return err
		}
		store, err := openWithRetry(cmd.Context(), st, newLogger("warn"))
		if err != nil {
			return err
		}
		defer store.Close()
		k, err := auth.NewStore(store).Revoke(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(cmd.OutOrStdout(), "revoked %s (project %s) at %s; servers refuse it within their --auth-refresh interval\n",
			k.ID, k.Project, k.RevokedAt.Format(time.RFC3339))
		return err
	}
	return cmd
}

func newKeysHashCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "hash [KEY]",
		Short: "Print a key's SHA-256, for --auth-key project:scopes:<hash> (reads the key from stdin without an argument)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var key string
			if len(args) == 1 {
				key = args[0]
			} else {
				sc := bufio.NewScanner(cmd.InOrStdin())
				if sc.Scan() {
					key = sc.Text()
				}
				if err := sc.Err(); err != nil {
					return fmt.Errorf("read key: %w", err)
				}
			}
			key = strings.TrimSpace(key)
			if key == "" {
				return errors.New("no key given")
			}
			_, err := fmt.Fprintln(cmd.OutOrStdout(), auth.Hash(key))
			return err
		},
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
