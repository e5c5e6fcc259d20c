package auth

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/tallyhq/tally/support/config"
)

// The SHA-256 test vectors of FIPS 180-2 (appendix B.1) and of the empty
// string, as published: Hash must be plain hex SHA-256 of the key's bytes, so
// that `tally keys hash` and `printf %s KEY | sha256sum` agree.
func TestHash(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
		{"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
	} {
		if got := Hash(c.in); got != c.want {
			t.Errorf("Hash(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestGenerate(t *testing.T) {
	// 32 random bytes in unpadded base32: ceil(256 / 5) = 52 characters.
	for _, c := range []struct {
		project string
		want    *regexp.Regexp
	}{
		{"billing", regexp.MustCompile(`^tly_billing_[a-z2-7]{52}$`)},
		{"Team-Support.EU", regexp.MustCompile(`^tly_teamsupporte_[a-z2-7]{52}$`)},              // "teamsupporteu" cut to 12
		{"averyveryverylongprojectname", regexp.MustCompile(`^tly_averyveryver_[a-z2-7]{52}$`)}, // hint cut at 12
		{"---", regexp.MustCompile(`^tly_[a-z2-7]{52}$`)},                                       // no letters: no hint
	} {
		k1, err := Generate(c.project)
		if err != nil {
			t.Fatal(err)
		}
		k2, err := Generate(c.project)
		if err != nil {
			t.Fatal(err)
		}
		if !c.want.MatchString(k1) {
			t.Errorf("Generate(%q) = %q, want %s", c.project, k1, c.want)
		}
		if k1 == k2 {
			t.Errorf("Generate(%q) returned the same key twice: %s", c.project, k1)
		}
	}
}

func TestParseScopes(t *testing.T) {
	for _, c := range []struct {
		in      string
		want    []Scope
		wantErr bool
	}{
		{"read", []Scope{ScopeRead}, false},
		{"ingest", []Scope{ScopeIngest}, false},
		{"read,ingest", []Scope{ScopeIngest, ScopeRead}, false},
		{"ingest+read", []Scope{ScopeIngest, ScopeRead}, false},
		{" read , read ", []Scope{ScopeRead}, false},
		{"metrics", []Scope{ScopeMetrics}, false},
		{"read+metrics", []Scope{ScopeMetrics, ScopeRead}, false},
		{"", nil, true},
		{"write", nil, true},
		{"read,admin", nil, true},
	} {
		got, err := ParseScopes(c.in)
		if (err != nil) != c.wantErr || !slices.Equal(got, c.want) {
			t.Errorf("ParseScopes(%q) = %v, %v; want %v, error %v", c.in, got, err, c.want, c.wantErr)
		}
	}
}

// TestScopes: every scope of the list parses alone, and a refusal names
// them all.
func TestScopes(t *testing.T) {
	for _, sc := range Scopes() {
		if got, err := ParseScope(" " + string(sc) + " "); err != nil || got != sc {
			t.Errorf("ParseScope(%q) = %q, %v", sc, got, err)
		}
	}
	for _, in := range []string{"write", ""} {
		_, err := ParseScopes(in)
		if err == nil {
			t.Fatalf("ParseScopes(%q) took it", in)
		}
		for _, sc := range Scopes() {
			if !strings.Contains(err.Error(), string(sc)) {
				t.Errorf("ParseScopes(%q): %v; want every scope named", in, err)
			}
		}
	}
}

// hashA and hashB stand for two keys' hashes.
var (
	hashA = strings.Repeat("a1", 32)
	hashB = strings.Repeat("0f", 32)
)

func TestParseStatic(t *testing.T) {
	for _, c := range []struct {
		spec    string
		want    Key
		wantErr string
	}{
		{spec: "billing:ingest:" + hashA,
			want: Key{ID: "static_a1a1a1a1a1a1", Project: "billing", Scopes: []Scope{ScopeIngest}, Hash: hashA, Static: true}},
		{spec: "billing:read,ingest:" + strings.ToUpper(hashA),
			want: Key{ID: "static_a1a1a1a1a1a1", Project: "billing", Scopes: []Scope{ScopeIngest, ScopeRead}, Hash: hashA, Static: true}},
		{spec: " ops:read+ingest:" + hashB + " ",
			want: Key{ID: "static_0f0f0f0f0f0f", Project: "ops", Scopes: []Scope{ScopeIngest, ScopeRead}, Hash: hashB, Static: true}},
		{spec: "billing:read:tly_billing_secretsecretsecret", wantErr: "not the key itself"},
		{spec: "billing:read:" + hashA[:63], wantErr: "64 hex digits"},
		{spec: "billing:write:" + hashA, wantErr: `scope "write"`},
		{spec: "bad project:read:" + hashA, wantErr: "project"},
		{spec: ":read:" + hashA, wantErr: "project"},
		{spec: "billing:" + hashA, wantErr: "want project:scope"},
	} {
		got, err := ParseStatic(c.spec)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("ParseStatic(%q) error = %v, want one containing %q", c.spec, err, c.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("ParseStatic error repeats the plaintext key: %v", err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseStatic(%q): %v", c.spec, err)
			continue
		}
		if got.ID != c.want.ID || got.Project != c.want.Project || !slices.Equal(got.Scopes, c.want.Scopes) ||
			got.Hash != c.want.Hash || got.Static != c.want.Static {
			t.Errorf("ParseStatic(%q) = %+v, want %+v", c.spec, got, c.want)
		}
	}
}

func TestStaticKeysFlag(t *testing.T) {
	var sk StaticKeys
	// The config layer passes a YAML list as one comma-joined value; scopes
	// may contain commas too: each spec ends at its 64-digit hash.
	if err := sk.Set("billing:ingest,read:" + hashA + ",ops:read:" + hashB); err != nil {
		t.Fatal(err)
	}
	if err := sk.Set("ops:ingest:" + hashA); err != nil { // repeated flag appends
		t.Fatal(err)
	}
	want := "billing:ingest+read:" + hashA + ",ops:read:" + hashB + ",ops:ingest:" + hashA
	if got := sk.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if len(sk.Keys) != 3 {
		t.Fatalf("got %d keys, want 3", len(sk.Keys))
	}
	for _, bad := range []string{
		"billing:read:" + hashA + ",tly_plaintextsecret",
		"billing:read:tly_plaintextsecret",
		"billing:read:" + hashA + "x",
	} {
		var s StaticKeys
		err := s.Set(bad)
		if err == nil {
			t.Errorf("Set(%q) accepted", bad)
			continue
		}
		if strings.Contains(err.Error(), "plaintextsecret") {
			t.Errorf("Set error repeats the plaintext key: %v", err)
		}
	}
}

// A YAML list of static keys in tally.yaml reaches the flag as one
// comma-joined value (package config); every spec must survive that.
func TestStaticKeysFromConfigFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tally.yaml")
	yaml := "auth:\n  key:\n    - billing:ingest,read:" + hashA + "\n    - ops:read:" + hashB + "\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	var sk StaticKeys
	fs.Var(&sk, "auth-key", "")
	if err := config.Apply(fs, path, true); err != nil {
		t.Fatal(err)
	}
	if want := "billing:ingest+read:" + hashA + ",ops:read:" + hashB; sk.String() != want {
		t.Errorf("static keys from %s: %q, want %q", path, sk.String(), want)
	}
}
