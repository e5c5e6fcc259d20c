// Package auth authenticates tally's callers with per-project API keys and UI
// sessions. It implements server.Authenticator: OTLP exporters and API
// clients send "Authorization: Bearer <key>"; a browser signs in once with a
// read key at /login and then carries a signed session cookie.
//
// Keys come from two sources, merged: static keys given to tally serve as
// hashes (--auth-key project:scopes:sha256hex, or tally.yaml), and managed
// keys created with tally keys create and stored in ClickHouse (table
// api_keys), which several tally replicas share. Only the SHA-256 of a key is
// ever stored.
//
// With no key configured at all (no static key and no row in api_keys, not
// even a revoked one) authentication is off and every caller is project
// "default"; tally serve allows that only on a loopback address. As soon as
// one key exists, authentication is on.
package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/tallyhq/tally/support/access"
)

// Scope is what a key may do.
type Scope string

// The scopes a key can carry; a key may carry several.
const (
	// ScopeIngest allows writing spans (POST /v1/traces) and nothing else.
	ScopeIngest Scope = "ingest"
	// ScopeRead allows the JSON API, the UI and the CLI.
	ScopeRead Scope = "read"
	// ScopeMetrics allows scraping /metrics (Prometheus). The metrics span
	// every project (their tools, agents, models and costs), so this scope
	// is for the operator's monitoring, not for a project's users; the key's
	// project does not limit what it sees.
	ScopeMetrics Scope = "metrics"
)

// Scopes are the scopes a key can carry, in the order the docs and the
// CLI's help list them: the one list that parsing and messages read.
func Scopes() []Scope { return []Scope{ScopeIngest, ScopeRead, ScopeMetrics} }

// JoinScopes writes scopes joined with sep: "read,ingest".
func JoinScopes(scopes []Scope, sep string) string {
	s := make([]string, len(scopes))
	for i, sc := range scopes {
		s[i] = string(sc)
	}
	return strings.Join(s, sep)
}

// ParseScope reads one scope name (surrounding space aside).
func ParseScope(s string) (Scope, error) {
	sc := Scope(strings.TrimSpace(s))
	if !slices.Contains(Scopes(), sc) {
		return "", fmt.Errorf("scope %q: want one of %s", sc, JoinScopes(Scopes(), ", "))
	}
	return sc, nil
}

// DefaultProject is every caller's project while authentication is off.
const DefaultProject = access.DefaultProject

// KeyPrefix starts every key tally generates, so that a leaked key is easy to
// recognise (and to find with secret scanners).
const KeyPrefix = "tly_"

// Key is an API key as tally knows it: everything but the plaintext.
type Key struct {
	ID        string    `json:"id"`
	Project   string    `json:"project"`
	Scopes    []Scope   `json:"scopes"`
	Name      string    `json:"name"`
	Hash      string    `json:"-"`                   // hex SHA-256 of the plaintext key
	CreatedAt time.Time `json:"created_at"`          // zero for static keys
	RevokedAt time.Time `json:"revoked_at,omitzero"` // zero while active
	Static    bool      `json:"static,omitempty"`    // from configuration, not ClickHouse
	version   uint64    // row version in ClickHouse
}

// Has reports whether the key carries scope s.
func (k Key) Has(s Scope) bool { return slices.Contains(k.Scopes, s) }

// Revoked reports whether the key has been revoked.
func (k Key) Revoked() bool { return !k.RevokedAt.IsZero() }

// Hash returns the hex SHA-256 of a plaintext key: what tally stores and
// compares. A fast hash is right here, unlike for passwords: a generated key
// holds 256 random bits, so no amount of fast guessing finds a preimage, and
// a slow KDF (bcrypt, argon2) would only add latency to every request. A
// random key also needs no salt: there are no dictionary or rainbow tables
// for uniformly random 256-bit strings.
func Hash(plaintext string) string {
	sum := sha256.Sum256([]byte(plaintext))
	return hex.EncodeToString(sum[:])
}

var keyEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// Generate returns a new random key for project: "tly_", a hint of the
// project (its letters and digits, at most 12, lower-cased; omitted when
// none), "_", then 32 random bytes in lower-case base32 (52 characters). The
// hint is for humans only: authentication uses the whole key's hash.
func Generate(project string) (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generate key: %w", err)
	}
	random := strings.ToLower(keyEncoding.EncodeToString(b[:]))
	if hint := projectHint(project); hint != "" {
		return KeyPrefix + hint + "_" + random, nil
	}
	return KeyPrefix + random, nil
}

func projectHint(project string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(project) {
		if b.Len() == 12 {
			break
		}
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// newID returns a key id: "key_" and 12 random hex digits. Ids are not
// secret; they name a key in tally keys list and revoke, and in sessions.
func newID() (string, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generate key id: %w", err)
	}
	return "key_" + hex.EncodeToString(b[:]), nil
}

var projectRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ValidProject checks a project name: 1 to 64 letters, digits, '.', '_' or
// '-', starting with a letter or digit.
func ValidProject(project string) error {
	if !projectRE.MatchString(project) {
		return fmt.Errorf("project %q: want 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit", project)
	}
	return nil
}

// ParseScopes parses one scope (ParseScope) or several joined with ',' or
// '+' ("read,ingest", "ingest+read") into a sorted list without duplicates.
func ParseScopes(s string) ([]Scope, error) {
	var out []Scope
	for _, part := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '+' }) {
		sc, err := ParseScope(part)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no scope: want %s, or several of them", JoinScopes(Scopes(), ", "))
	}
	slices.Sort(out)
	return out, nil
}

var hashRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// ParseStatic parses a static key spec "project:scope[,scope]:sha256hex"
// (scopes may also be joined with '+'). The hash is the key's hex SHA-256,
// as printed by tally keys hash; a plaintext key is refused, so that none is
// ever written in a config file. The key's id is "static_" and the hash's
// first 12 digits.
func ParseStatic(spec string) (Key, error) {
	parts := strings.Split(strings.TrimSpace(spec), ":")
	if len(parts) != 3 {
		return Key{}, fmt.Errorf("static key %q: want project:scope[,scope]:sha256hex", redactSpec(spec))
	}
	project, scopes, hash := parts[0], parts[1], strings.ToLower(parts[2])
	if err := ValidProject(project); err != nil {
		return Key{}, fmt.Errorf("static key: %w", err)
	}
	sc, err := ParseScopes(scopes)
	if err != nil {
		return Key{}, fmt.Errorf("static key for project %s: %w", project, err)
	}
	if !hashRE.MatchString(hash) {
		return Key{}, fmt.Errorf("static key for project %s: want the key's SHA-256 as 64 hex digits (tally keys hash), not the key itself", project)
	}
	return Key{ID: "static_" + hash[:12], Project: project, Scopes: sc, Hash: hash, Static: true}, nil
}

// redactSpec hides what may be a plaintext key in an error message.
func redactSpec(spec string) string {
	if i := strings.LastIndex(spec, ":"); i >= 0 {
		return spec[:i+1] + "…"
	}
	if len(spec) > 8 {
		return spec[:4] + "…"
	}
	return spec
}

// specListRE finds static key specs in a comma-separated list, where the
// scopes themselves may be comma-separated: each spec ends with its 64-digit
// hash, which delimits it.
var specListRE = regexp.MustCompile(`\s*([^,:\s][^,:]*):([a-z+, ]+):([0-9a-fA-F]{64})\s*(,|$)`)

// StaticKeys is a list of static keys usable as a repeatable command-line
// flag (pflag.Value): each value is one spec or a comma-separated list of
// them, as the config layer passes YAML lists.
type StaticKeys struct{ Keys []Key }

// Set parses one spec or a comma-separated list of specs and appends them.
func (s *StaticKeys) Set(value string) error {
	value = strings.TrimSpace(value)
	if value == "" {
		return nil
	}
	matches := specListRE.FindAllStringSubmatchIndex(value, -1)
	end := 0
	for _, m := range matches {
		if m[0] != end {
			break
		}
		end = m[1]
	}
	if len(matches) == 0 || end != len(value) {
		// Not a clean list: report the first spec that does not parse.
		for _, spec := range strings.Split(value, ",") {
			if _, err := ParseStatic(spec); err != nil {
				return err
			}
		}
		return fmt.Errorf("static keys %q: want project:scope[,scope]:sha256hex, comma-separated", redactSpec(value))
	}
	for _, m := range matches {
		k, err := ParseStatic(value[m[2]:m[3]] + ":" + value[m[4]:m[5]] + ":" + value[m[6]:m[7]])
		if err != nil {
			return err
		}
		s.Keys = append(s.Keys, k)
	}
	return nil
}

// String lists the specs (they hold hashes only, never a plaintext key).
func (s *StaticKeys) String() string {
	specs := make([]string, len(s.Keys))
	for i, k := range s.Keys {
		scopes := make([]string, len(k.Scopes))
		for j, sc := range k.Scopes {
			scopes[j] = string(sc)
		}
		specs[i] = k.Project + ":" + strings.Join(scopes, "+") + ":" + k.Hash
	}
	return strings.Join(specs, ",")
}

// Type names the flag's value type in help output.
func (s *StaticKeys) Type() string { return "project:scopes:sha256" }
