package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// DefaultSessionTTL is how long a UI session lasts after sign-in.
const DefaultSessionTTL = 12 * time.Hour

// MinSecretBytes is the shortest session secret accepted.
const MinSecretBytes = 32

// SecretFile is the file in the data directory that holds the generated
// session secret when none is configured.
const SecretFile = "session.secret"

// Session token errors.
var (
	ErrSessionInvalid = errors.New("invalid session")
	ErrSessionExpired = errors.New("session expired")
)

// Sessions issues and verifies UI session tokens. A token names the session
// (a random id, so that signing out can revoke exactly it), the key the
// session was signed in with and when it expires, and carries an
// HMAC-SHA256 of all three under the server's secret:
//
//	base64url("2|<key id>|<expiry unix seconds>|<session id>") "." base64url(HMAC)
//
// It holds no secret (neither id is one), so the cookie can be read without
// harm; it cannot be forged or extended without the secret. Servers that
// share a secret accept each other's sessions. Revocation (sign-out) is kept
// by the Keyring, not in the token.
type Sessions struct {
	secret []byte
	ttl    time.Duration
	now    func() time.Time
}

// Session is what a verified token says.
type Session struct {
	ID      string    // random, unique per sign-in
	KeyID   string    // the key the session was signed in with
	Expires time.Time // when the token stops being accepted
}

// NewSessions returns a signer with secret (at least MinSecretBytes bytes)
// whose sessions last ttl (DefaultSessionTTL when zero).
func NewSessions(secret []byte, ttl time.Duration) (*Sessions, error) {
	if len(secret) < MinSecretBytes {
		return nil, fmt.Errorf("session secret: %d bytes, want at least %d", len(secret), MinSecretBytes)
	}
	if ttl <= 0 {
		ttl = DefaultSessionTTL
	}
	return &Sessions{secret: append([]byte(nil), secret...), ttl: ttl, now: time.Now}, nil
}

// TTL is how long a new session lasts.
func (s *Sessions) TTL() time.Duration { return s.ttl }

// Issue returns a token for a new session signed in with key keyID, and when
// it expires.
func (s *Sessions) Issue(keyID string) (token string, expires time.Time) {
	expires = s.now().Add(s.ttl).Truncate(time.Second)
	payload := base64.RawURLEncoding.EncodeToString([]byte("2|" + keyID + "|" +
		strconv.FormatInt(expires.Unix(), 10) + "|" + strings.ToLower(rand.Text())))
	return payload + "." + base64.RawURLEncoding.EncodeToString(s.mac(payload)), expires
}

// Verify checks a token's signature and expiry and returns the session it
// names. Tokens of the earlier format (version 1, without a session id)
// are invalid: they could not be revoked.
func (s *Sessions) Verify(token string) (Session, error) {
	payload, sig, ok := strings.Cut(token, ".")
	if !ok {
		return Session{}, ErrSessionInvalid
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, s.mac(payload)) {
		return Session{}, ErrSessionInvalid
	}
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return Session{}, ErrSessionInvalid
	}
	fields := strings.Split(string(raw), "|")
	if len(fields) != 4 || fields[0] != "2" || fields[1] == "" || fields[3] == "" {
		return Session{}, ErrSessionInvalid
	}
	exp, err := strconv.ParseInt(fields[2], 10, 64)
	if err != nil {
		return Session{}, ErrSessionInvalid
	}
	expires := time.Unix(exp, 0).UTC()
	if !s.now().Before(expires) {
		return Session{}, ErrSessionExpired
	}
	return Session{ID: fields[3], KeyID: fields[1], Expires: expires}, nil
}

func (s *Sessions) mac(payload string) []byte {
	m := hmac.New(sha256.New, s.secret)
	m.Write([]byte("tally-session\x00"))
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// LoadOrCreateSecret returns the session secret kept in dir/SecretFile,
// creating it (32 random bytes, hex, mode 0600) on first use. Replicas behind
// one load balancer need the same secret: give them --session-secret instead.
func LoadOrCreateSecret(dir string) ([]byte, error) {
	path := filepath.Join(dir, SecretFile)
	if secret, err := readSecret(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return secret, err
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("generate session secret: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) { // another process made it first
		return readSecret(path)
	}
	if err != nil {
		return nil, fmt.Errorf("create session secret: %w", err)
	}
	secret := []byte(hex.EncodeToString(b[:]))
	if _, err := f.Write(append(secret, '\n')); err != nil {
		f.Close()
		return nil, fmt.Errorf("write session secret %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, fmt.Errorf("write session secret %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("write session secret %s: %w", path, err)
	}
	return secret, nil
}

func readSecret(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read session secret: %w", err)
	}
	secret := []byte(strings.TrimSpace(string(b)))
	if len(secret) < MinSecretBytes {
		return nil, fmt.Errorf("session secret %s: %d bytes, want at least %d", path, len(secret), MinSecretBytes)
	}
	return secret, nil
}
