package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tallyhq/tally/internal/testenv"
	"github.com/tallyhq/tally/schema"
	"github.com/tallyhq/tally/support/auth"
	"github.com/tallyhq/tally/support/config"
)

// tallyCLI runs the tally command line in-process and returns its output.
func tallyCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	root := newRootCmd()
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetIn(strings.NewReader(""))
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

var keyLineRE = regexp.MustCompile(`(?m)^key:\s+(tly_\S+)$`)
var idLineRE = regexp.MustCompile(`(?m)^id:\s+(key_[0-9a-f]{12})$`)

func TestKeysCLI(t *testing.T) {
	ch := testenv.ClickHouse(t)
	db := ch.NewDatabase(t)
	conn := []string{"--clickhouse-addr", ch.Addr, "--clickhouse-database", db, "--config", ""}
	keys := func(args ...string) string {
		t.Helper()
		out, err := tallyCLI(t, append(append([]string{"keys"}, args...), conn...)...)
		if err != nil {
			t.Fatalf("tally keys %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}

	out := keys("create", "--project", "billing", "--scope", "read,ingest", "--name", "ci pipeline")
	key := keyLineRE.FindStringSubmatch(out)
	id := idLineRE.FindStringSubmatch(out)
	if key == nil || id == nil || !strings.HasPrefix(key[1], "tly_billing_") {
		t.Fatalf("keys create printed no id and billing key:\n%s", out)
	}
	keys("create", "--project", "ops", "--scope", "ingest")

	// Only the hash is stored, and it is the SHA-256 of the printed key.
	store, err := schema.Open(context.Background(), schema.Config{Addr: ch.Addr, Database: db})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	stored, err := auth.NewStore(store).List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Both keys were created within the same second or two: list order
	// between them is by id, so look the billing key up.
	billing := slices.IndexFunc(stored, func(k auth.Key) bool { return k.ID == id[1] })
	if len(stored) != 2 || billing < 0 || stored[billing].Hash != auth.Hash(key[1]) {
		t.Fatalf("stored keys %+v, want 2 with %s holding the printed key's hash", stored, id[1])
	}

	list := keys("list")
	for _, want := range []string{"ID", id[1], "billing", "ingest,read", "ci pipeline", "ops"} {
		if !strings.Contains(list, want) {
			t.Errorf("keys list lacks %q:\n%s", want, list)
		}
	}
	if strings.Contains(list, key[1]) || strings.Contains(list, stored[billing].Hash) {
		t.Errorf("keys list shows the key or its hash:\n%s", list)
	}

	if out := keys("revoke", id[1]); !strings.Contains(out, "revoked "+id[1]) {
		t.Errorf("keys revoke: %s", out)
	}
	var listed []struct {
		ID        string   `json:"id"`
		Project   string   `json:"project"`
		Scopes    []string `json:"scopes"`
		RevokedAt string   `json:"revoked_at"`
	}
	if err := json.Unmarshal([]byte(keys("list", "--json")), &listed); err != nil {
		t.Fatal(err)
	}
	revoked := map[string]bool{}
	for _, k := range listed {
		revoked[k.Project] = k.RevokedAt != ""
	}
	if len(listed) != 2 || !revoked["billing"] || revoked["ops"] {
		t.Errorf("keys list --json after revoking %s: %+v, want billing's key revoked and ops' key active", id[1], listed)
	}

	if out, err := tallyCLI(t, append([]string{"keys", "revoke", "key_000000000000"}, conn...)...); err == nil {
		t.Errorf("revoking an unknown id succeeded: %s", out)
	}
	if out, err := tallyCLI(t, append([]string{"keys", "create", "--project", "billing", "--scope", "write"}, conn...)...); err == nil {
		t.Errorf("creating a key with scope write succeeded: %s", out)
	}
}

func TestKeysHashAndStatic(t *testing.T) {
	// SHA-256("abc"), the FIPS 180-2 test vector.
	out, err := tallyCLI(t, "keys", "hash", "abc")
	if err != nil || out != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\n" {
		t.Errorf("keys hash abc: %q, %v", out, err)
	}

	out, err = tallyCLI(t, "keys", "create", "--static", "--project", "edge", "--scope", "ingest", "--config", "")
	if err != nil {
		t.Fatal(err)
	}
	key := keyLineRE.FindStringSubmatch(out)
	spec := regexp.MustCompile(`(?m)^auth-key:\s+(\S+)$`).FindStringSubmatch(out)
	if key == nil || spec == nil {
		t.Fatalf("keys create --static:\n%s", out)
	}
	k, err := auth.ParseStatic(spec[1])
	if err != nil {
		t.Fatalf("printed spec %q does not parse: %v", spec[1], err)
	}
	if k.Project != "edge" || !k.Has(auth.ScopeIngest) || k.Has(auth.ScopeRead) || k.Hash != auth.Hash(key[1]) {
		t.Errorf("printed spec %q is %+v, want edge, ingest only, hash of the printed key", spec[1], k)
	}
}

// TestServeRefusesOpenNonLoopback checks the dev default: without any key,
// serve refuses a non-loopback address unless --insecure; with a key (static
// or managed) it goes on. 192.0.2.1 (TEST-NET-1) is not an address of this
// machine, so a serve that goes on fails at listen instead of serving.
func TestServeRefusesOpenNonLoopback(t *testing.T) {
	ch := testenv.ClickHouse(t)
	db := ch.NewDatabase(t)
	serve := func(extra ...string) error {
		args := append([]string{"serve", "--listen", "192.0.2.1:4318", "--data-dir", t.TempDir(),
			"--clickhouse-addr", ch.Addr, "--clickhouse-database", db, "--config", ""}, extra...)
		out, err := tallyCLI(t, args...)
		if err == nil {
			t.Fatalf("serve %v returned without error:\n%s", extra, out)
		}
		return err
	}
	const refused = "refusing to serve on non-loopback"
	if err := serve(); !strings.Contains(err.Error(), refused) {
		t.Errorf("no keys: %v, want %q", err, refused)
	}
	for name, extra := range map[string][]string{
		"--insecure": {"--insecure"},
		"static key": {"--auth-key", "edge:ingest:" + auth.Hash("tly_any")},
	} {
		if err := serve(extra...); strings.Contains(err.Error(), refused) || !strings.Contains(err.Error(), "listen") {
			t.Errorf("%s: %v, want a listen error, not a refusal", name, err)
		}
	}
	if _, err := tallyCLI(t, "keys", "create", "--project", "edge", "--scope", "read",
		"--clickhouse-addr", ch.Addr, "--clickhouse-database", db, "--config", ""); err != nil {
		t.Fatal(err)
	}
	if err := serve(); strings.Contains(err.Error(), refused) || !strings.Contains(err.Error(), "listen") {
		t.Errorf("managed key: %v, want a listen error, not a refusal", err)
	}
}

// TestAccessFlagsLayering: --allowed-hosts and --trusted-proxies come from
// flags, else TALLY_* environment, else tally.yaml, like every setting.
func TestAccessFlagsLayering(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tally.yaml")
	if err := os.WriteFile(file, []byte("allowed_hosts: [file.example, 192.168.1.20]\ntrusted_proxies: [10.0.0.0/8]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name           string
		args           []string
		env            map[string]string
		hosts, proxies string
	}{
		{"file", nil, nil, "file.example,192.168.1.20", "10.0.0.0/8"},
		{"environment over file", nil, map[string]string{"TALLY_ALLOWED_HOSTS": "env.example", "TALLY_TRUSTED_PROXIES": "192.0.2.10"},
			"env.example", "192.0.2.10"},
		{"flag over environment", []string{"--allowed-hosts", "flag.example", "--trusted-proxies", "::1"},
			map[string]string{"TALLY_ALLOWED_HOSTS": "env.example"}, "flag.example", "::1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			fs := newServeCmd().Flags()
			if err := fs.Parse(c.args); err != nil {
				t.Fatal(err)
			}
			if err := config.Apply(fs, file, true); err != nil {
				t.Fatal(err)
			}
			hosts, _ := fs.GetStringSlice("allowed-hosts")
			proxies, _ := fs.GetStringSlice("trusted-proxies")
			if strings.Join(hosts, ",") != c.hosts || strings.Join(proxies, ",") != c.proxies {
				t.Errorf("allowed-hosts %v, trusted-proxies %v; want %s and %s", hosts, proxies, c.hosts, c.proxies)
			}
		})
	}
}
