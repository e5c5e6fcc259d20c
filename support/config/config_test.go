package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
)

func TestApplyPrecedence(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tally.yaml")
	if err := os.WriteFile(path, []byte(`
listen: 127.0.0.1:9999
clickhouse:
  addr: file:9000
  database: fromfile
max_spans_per_request: 77
`), 0o600); err != nil {
		t.Fatal(err)
	}
	flags := pflag.NewFlagSet("t", pflag.ContinueOnError)
	listen := flags.String("listen", "default:1", "")
	addr := flags.String("clickhouse-addr", "default:9000", "")
	db := flags.String("clickhouse-database", "tally", "")
	user := flags.String("clickhouse-username", "default", "")
	maxSpans := flags.Int("max-spans-per-request", 10, "")
	if err := flags.Parse([]string{"--clickhouse-addr", "flag:9000"}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TALLY_CLICKHOUSE_DATABASE", "fromenv")
	if err := Apply(flags, path, true); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, got, want string }{
		{"flag beats env and file", *addr, "flag:9000"},
		{"env beats file", *db, "fromenv"},
		{"file beats default", *listen, "127.0.0.1:9999"},
		{"default when nowhere", *user, "default"},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, c.got, c.want)
		}
	}
	if *maxSpans != 77 {
		t.Errorf("underscored file key: got %d, want 77", *maxSpans)
	}
}

func TestApplyErrors(t *testing.T) {
	flags := pflag.NewFlagSet("t", pflag.ContinueOnError)
	flags.Int("max-spans-per-request", 10, "")
	if err := Apply(flags, filepath.Join(t.TempDir(), "missing.yaml"), true); err == nil {
		t.Error("missing explicit config file: want an error")
	}
	if err := Apply(flags, filepath.Join(t.TempDir(), "missing.yaml"), false); err != nil {
		t.Errorf("missing default config file: %v", err)
	}
	t.Setenv("TALLY_MAX_SPANS_PER_REQUEST", "many")
	if err := Apply(flags, "", false); err == nil {
		t.Error("non-integer env value: want an error")
	}
}
