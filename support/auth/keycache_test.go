package auth

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeyCacheAnswersDuringOutage: after one successful load the cache file
// holds the keys (hashes only), and a keyring started while the source is
// down authenticates from it as before.
func TestKeyCacheAnswersDuringOutage(t *testing.T) {
	src := &fakeSource{keys: []Key{{ID: "key_1", Project: "alpha", Scopes: []Scope{ScopeIngest}, Hash: Hash("tly_1")}}}
	path := filepath.Join(t.TempDir(), "keys-cache.json")
	cache := &KeyCache{Source: src, Path: path}
	if _, err := NewKeyring(context.Background(), Config{Source: cache}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o600 {
		t.Errorf("cache mode %v, want 0600", info.Mode().Perm())
	}
	if contains := string(b); len(contains) == 0 || !strings.Contains(contains, Hash("tly_1")) || strings.Contains(contains, "\"tly_1\"") {
		t.Errorf("cache %s: want the key's hash and never the key", b)
	}
	src.keys, src.err = nil, errors.New("clickhouse down")
	k, err := NewKeyring(context.Background(), Config{Source: &KeyCache{Source: src, Path: path}})
	if err != nil {
		t.Fatalf("keyring from the cache: %v", err)
	}
	if got := outcome(k.AuthenticateIngest(bearerRequest("tly_1"))); got != "project alpha" {
		t.Errorf("cached key: %s, want project alpha", got)
	}
	if got := outcome(k.AuthenticateIngest(bearerRequest("tly_other"))); got != "401" {
		t.Errorf("unknown key with a cache: %s, want 401", got)
	}
}

// TestKeyringStartUnavailable: without a cache, a keyring started during an
// outage keeps authentication on, accepts static keys, answers every other
// request ErrKeysUnavailable (503, retry) — never open, never 401 — and
// turns normal once a refresh loads the keys.
func TestKeyringStartUnavailable(t *testing.T) {
	static := Key{ID: "static_1", Project: "ops", Scopes: []Scope{ScopeIngest}, Hash: Hash("tly_static"), Static: true}
	src := &fakeSource{err: errors.New("clickhouse down")}
	if _, err := NewKeyring(context.Background(), Config{Source: src}); err == nil {
		t.Fatal("without StartUnavailable the keyring started although the keys could not be read")
	}
	k, err := NewKeyring(context.Background(), Config{Source: src, Static: []Key{static}, StartUnavailable: true})
	if err != nil {
		t.Fatal(err)
	}
	if !k.Enabled() {
		t.Error("authentication off while the keys are unknown")
	}
	if got := outcome(k.AuthenticateIngest(bearerRequest("tly_static"))); got != "project ops" {
		t.Errorf("static key: %s, want project ops", got)
	}
	for _, key := range []string{"", "tly_managed"} {
		if _, err := k.AuthenticateIngest(bearerRequest(key)); !errors.Is(err, ErrKeysUnavailable) {
			t.Errorf("key %q while unavailable: %v, want ErrKeysUnavailable", key, err)
		}
	}
	src.keys, src.err = []Key{{ID: "key_2", Project: "beta", Scopes: []Scope{ScopeIngest}, Hash: Hash("tly_managed")}}, nil
	if err := k.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := outcome(k.AuthenticateIngest(bearerRequest("tly_managed"))); got != "project beta" {
		t.Errorf("after the keys loaded: %s, want project beta", got)
	}
	if got := outcome(k.AuthenticateIngest(bearerRequest(""))); got != "401" {
		t.Errorf("no key after the keys loaded: %s, want 401", got)
	}
}
