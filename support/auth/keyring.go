package auth

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/tallyhq/tally/support/access"
)

// DefaultRefresh is how often a Keyring reloads managed keys: a key created
// or revoked with tally keys takes effect on every server within it.
const DefaultRefresh = 10 * time.Second

// SessionCookie is the name of the UI session cookie.
const SessionCookie = "tally_session"

// KeySource lists managed keys, revoked ones included; *Store implements it.
type KeySource interface {
	List(ctx context.Context) ([]Key, error)
}

// SessionRevocations keeps signed-out UI sessions where every replica sees
// them; *Store implements it.
type SessionRevocations interface {
	// RevokeSession records that session id is signed out; expires is when
	// its token would stop being accepted anyway, after which the record may
	// be forgotten.
	RevokeSession(ctx context.Context, id string, expires time.Time) error
	// RevokedSessions lists the signed-out sessions that have not expired:
	// session id → the token's expiry.
	RevokedSessions(ctx context.Context) (map[string]time.Time, error)
}

// Config configures a Keyring. Zero fields take the defaults given on each.
type Config struct {
	// Static keys, from configuration.
	Static []Key
	// Source of managed keys; nil for static keys only.
	Source KeySource
	// Refresh is how often Run reloads Source (DefaultRefresh).
	Refresh time.Duration
	// Sessions signs UI session cookies; nil turns UI sign-in off (the
	// /login page says so, and no cookie is accepted).
	Sessions *Sessions
	// Revocations shares sign-outs between replicas; nil keeps them in this
	// process only.
	Revocations SessionRevocations
	// TrustedProxies are the addresses of reverse proxies whose
	// X-Forwarded-Host and X-Forwarded-Proto headers are believed (sign-in
	// origin check, Secure cookies); from any other client they are ignored.
	// Empty trusts none.
	TrustedProxies []netip.Prefix
	// Logger receives refresh failures (never a key).
	Logger *slog.Logger
	// StartUnavailable lets NewKeyring succeed when the managed keys cannot
	// be loaded (a start during a ClickHouse outage, with no KeyCache file):
	// authentication is then on, static keys work and any other key gets
	// ErrKeysUnavailable until a refresh succeeds. Without it NewKeyring
	// fails, so that a server never starts open by mistake.
	StartUnavailable bool
}

// Keyring authenticates requests against the configured keys; it implements
// server.Authenticator and its optional login redirect. It caches managed
// keys and reloads them every Config.Refresh (Run), so a revocation takes
// effect within that interval; when a reload fails it keeps the last keys it
// loaded and retries at the next tick.
type Keyring struct {
	cfg Config
	log *slog.Logger

	mu      sync.RWMutex
	active  map[string]Key // by hash: keys that are not revoked
	byID    map[string]Key // every key, revoked ones included
	enabled bool
	revoked map[string]time.Time // signed-out session id → its token's expiry
	// unavailable: the managed keys were never loaded (Config.StartUnavailable).
	unavailable bool
}

// NewKeyring loads the keys once and returns the keyring; it fails when the
// managed keys cannot be read, so that a server never starts open by
// mistake.
func NewKeyring(ctx context.Context, cfg Config) (*Keyring, error) {
	if cfg.Refresh <= 0 {
		cfg.Refresh = DefaultRefresh
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	k := &Keyring{cfg: cfg, log: cfg.Logger, revoked: map[string]time.Time{}}
	if err := k.Refresh(ctx); err != nil {
		if !cfg.StartUnavailable {
			return nil, err
		}
		// Authentication stays on: only static keys are known, any other
		// key is answered 503 (retry) until a refresh loads the keys.
		k.mu.Lock()
		k.unavailable, k.enabled = true, true
		k.active, k.byID = map[string]Key{}, map[string]Key{}
		for _, key := range cfg.Static {
			k.active[key.Hash], k.byID[key.ID] = key, key
		}
		k.mu.Unlock()
		k.log.Warn("api keys: not loaded (ClickHouse unreachable, no cache yet); static keys work, others get 503 until they load", "err", err)
	}
	return k, nil
}

func (k *Keyring) isUnavailable() bool {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.unavailable
}

// ErrKeysUnavailable is returned for a key the keyring cannot judge yet: the
// managed keys have not been loaded since start (ClickHouse unreachable, no
// cache). It is answered 503 with Retry-After, so exporters retry.
var ErrKeysUnavailable = errors.New("api keys not loaded yet (ClickHouse unreachable): retry")

// Refresh reloads the managed keys and the signed-out sessions now.
func (k *Keyring) Refresh(ctx context.Context) error {
	var managed []Key
	if k.cfg.Source != nil {
		var err error
		if managed, err = k.cfg.Source.List(ctx); err != nil {
			return fmt.Errorf("load api keys: %w", err)
		}
	}
	var revoked map[string]time.Time
	if k.cfg.Revocations != nil {
		var err error
		if revoked, err = k.cfg.Revocations.RevokedSessions(ctx); err != nil {
			return fmt.Errorf("load signed-out sessions: %w", err)
		}
	}
	active := map[string]Key{}
	byID := map[string]Key{}
	for _, key := range managed {
		byID[key.ID] = key
		if !key.Revoked() {
			active[key.Hash] = key
		}
	}
	for _, key := range k.cfg.Static { // a static key wins over a managed one
		byID[key.ID] = key
		active[key.Hash] = key
	}
	now := time.Now()
	k.mu.Lock()
	// Sign-outs made here stay revoked even when storing them failed; the
	// ones that expired are forgotten.
	for id, exp := range k.revoked {
		if _, ok := revoked[id]; !ok && now.Before(exp) {
			if revoked == nil {
				revoked = map[string]time.Time{}
			}
			revoked[id] = exp
		}
	}
	for id, exp := range revoked {
		if !now.Before(exp) {
			delete(revoked, id)
		}
	}
	if revoked == nil {
		revoked = map[string]time.Time{}
	}
	k.revoked = revoked
	k.active, k.byID = active, byID
	k.unavailable = false
	// A revoked key still counts: revoking the last key must not switch
	// authentication off.
	k.enabled = len(byID) > 0
	k.mu.Unlock()
	return nil
}

// Run reloads the managed keys every Config.Refresh until ctx ends. Run it
// as a server job.
func (k *Keyring) Run(ctx context.Context) {
	if k.cfg.Source == nil {
		return
	}
	t := time.NewTicker(k.cfg.Refresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := k.Refresh(ctx); err != nil && ctx.Err() == nil {
				k.log.Warn("api keys: refresh failed; keeping the keys loaded before", "err", err)
			}
		}
	}
}

// Enabled reports whether authentication is on: some key (static or
// managed, even revoked) exists.
func (k *Keyring) Enabled() bool {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.enabled
}

// AuthenticateIngest authenticates POST /v1/traces: a bearer key with the
// ingest scope. It returns the key's project.
func (k *Keyring) AuthenticateIngest(r *http.Request) (string, error) {
	if !k.Enabled() {
		return DefaultProject, nil
	}
	key, err := k.bearer(r)
	if err != nil {
		return "", err
	}
	if !key.Has(ScopeIngest) {
		return "", fmt.Errorf("%w: API key %s has no ingest scope", access.ErrForbidden, key.ID)
	}
	return key.Project, nil
}

// AuthenticateRead authenticates the API, UI and CLI: a bearer key with the
// read scope or, without an Authorization header, a valid UI session whose
// key is still active. It returns the key's project.
func (k *Keyring) AuthenticateRead(r *http.Request) (string, error) {
	if !k.Enabled() {
		return DefaultProject, nil
	}
	var key Key
	if r.Header.Get("Authorization") != "" {
		var err error
		if key, err = k.bearer(r); err != nil {
			return "", err
		}
	} else {
		var err error
		if key, err = k.session(r); err != nil {
			return "", err
		}
	}
	if !key.Has(ScopeRead) {
		return "", fmt.Errorf("%w: API key %s has no read scope", access.ErrForbidden, key.ID)
	}
	return key.Project, nil
}

// AuthenticateMetrics authenticates a scrape of /metrics: a bearer key with
// the metrics scope (Prometheus sends it from its scrape config). The
// metrics cover every project, so a project's read key is not enough, and a
// UI session never is. With authentication off anyone may scrape.
func (k *Keyring) AuthenticateMetrics(r *http.Request) error {
	if !k.Enabled() {
		return nil
	}
	key, err := k.bearer(r)
	if err != nil {
		return err
	}
	if !key.Has(ScopeMetrics) {
		return fmt.Errorf("%w: API key %s has no metrics scope (create one with tally keys create --scope metrics)", access.ErrForbidden, key.ID)
	}
	return nil
}

// bearer resolves the request's Authorization: Bearer key.
//
// The key is found by a map lookup on its SHA-256. That lookup is not
// constant-time, but what its timing could reveal is how the hash of the
// caller's own guess compares with stored hashes; learning bits of a hash
// does not help find a key that produces it (a preimage of SHA-256), so it
// leaks nothing usable. The final comparison is constant-time all the same.
func (k *Keyring) bearer(r *http.Request) (Key, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		if k.isUnavailable() {
			// Whether any key is needed is not known yet.
			return Key{}, ErrKeysUnavailable
		}
		return Key{}, fmt.Errorf("%w: no API key (send Authorization: Bearer <key>)", access.ErrUnauthenticated)
	}
	scheme, token, ok := strings.Cut(h, " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return Key{}, fmt.Errorf("%w: Authorization header is not \"Bearer <key>\"", access.ErrUnauthenticated)
	}
	return k.lookup(token)
}

func (k *Keyring) lookup(plaintext string) (Key, error) {
	h := Hash(plaintext)
	k.mu.RLock()
	key, ok := k.active[h]
	unavailable := k.unavailable
	k.mu.RUnlock()
	if !ok || subtle.ConstantTimeCompare([]byte(key.Hash), []byte(h)) != 1 {
		if unavailable {
			return Key{}, ErrKeysUnavailable
		}
		return Key{}, fmt.Errorf("%w: unknown or revoked API key", access.ErrUnauthenticated)
	}
	return key, nil
}

// session resolves the request's UI session cookie to the key it was signed
// in with, which must still be active.
func (k *Keyring) session(r *http.Request) (Key, error) {
	c, err := r.Cookie(SessionCookie)
	if err != nil && k.isUnavailable() {
		return Key{}, ErrKeysUnavailable
	}
	if err != nil || k.cfg.Sessions == nil {
		return Key{}, fmt.Errorf("%w: no API key (send Authorization: Bearer <key>, or sign in at /login)", access.ErrUnauthenticated)
	}
	sess, err := k.cfg.Sessions.Verify(c.Value)
	if err != nil {
		return Key{}, fmt.Errorf("%w: %w: sign in again at /login", access.ErrUnauthenticated, err)
	}
	k.mu.RLock()
	key, ok := k.byID[sess.KeyID]
	_, signedOut := k.revoked[sess.ID]
	unavailable := k.unavailable
	k.mu.RUnlock()
	if unavailable && !ok {
		return Key{}, ErrKeysUnavailable
	}
	if signedOut {
		return Key{}, fmt.Errorf("%w: signed out: sign in again at /login", access.ErrUnauthenticated)
	}
	if !ok || key.Revoked() {
		return Key{}, fmt.Errorf("%w: the session's API key was revoked: sign in again at /login", access.ErrUnauthenticated)
	}
	return key, nil
}

// revokeSession signs out the session of token: this server refuses it at
// once, and every replica sharing Config.Revocations within its refresh
// interval. A token that does not verify needs no revoking.
func (k *Keyring) revokeSession(ctx context.Context, token string) error {
	if k.cfg.Sessions == nil || token == "" {
		return nil
	}
	sess, err := k.cfg.Sessions.Verify(token)
	if err != nil {
		return nil
	}
	k.mu.Lock()
	k.revoked[sess.ID] = sess.Expires
	k.mu.Unlock()
	if k.cfg.Revocations == nil {
		return nil
	}
	if err := k.cfg.Revocations.RevokeSession(ctx, sess.ID, sess.Expires); err != nil {
		return fmt.Errorf("store sign-out of session %s: %w", sess.ID, err)
	}
	return nil
}

// fromTrustedProxy reports whether r comes straight from a configured
// reverse proxy, whose X-Forwarded-* headers may then be believed.
func (k *Keyring) fromTrustedProxy(r *http.Request) bool {
	if len(k.cfg.TrustedProxies) == 0 {
		return false
	}
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	addr := ap.Addr().Unmap()
	for _, p := range k.cfg.TrustedProxies {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// ParseTrustedProxies parses reverse proxy addresses for
// Config.TrustedProxies: CIDR prefixes ("10.0.0.0/8") or single addresses
// ("192.0.2.10", "::1").
func ParseTrustedProxies(specs []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, spec := range specs {
		spec = strings.TrimSpace(spec)
		if spec == "" {
			continue
		}
		if p, err := netip.ParsePrefix(spec); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(spec)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q: want an IP address or a CIDR prefix", spec)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}
