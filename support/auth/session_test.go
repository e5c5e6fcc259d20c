package auth

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var testSecret = []byte("0123456789abcdef0123456789abcdef") // 32 bytes

// fixedSessions signs with testSecret and a clock the test moves.
func fixedSessions(t *testing.T, now *time.Time) *Sessions {
	t.Helper()
	s, err := NewSessions(testSecret, 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	s.now = func() time.Time { return *now }
	return s
}

func TestSessionIssueVerify(t *testing.T) {
	now := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	s := fixedSessions(t, &now)
	token, expires := s.Issue("key_0123456789ab")
	// Issued at 10:00 with a 2h lifetime: expires at 12:00.
	if want := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC); !expires.Equal(want) {
		t.Errorf("expires %v, want %v", expires, want)
	}
	payload, _, _ := strings.Cut(token, ".")
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		t.Fatal(err)
	}
	// 2025-03-01T12:00:00Z is 1740830400 seconds after the epoch
	// (20148 days × 86400 = 1740787200, plus 12 × 3600 = 43200).
	// A random session id follows: 26 base32 characters.
	if want := "2|key_0123456789ab|1740830400|"; !strings.HasPrefix(string(raw), want) || len(raw) != len(want)+26 {
		t.Errorf("payload %q, want %q and a 26-character session id", raw, want)
	}
	if again, _ := s.Issue("key_0123456789ab"); again == token {
		t.Error("two sign-ins got the same token: sessions cannot be told apart")
	}

	for _, c := range []struct {
		name    string
		at      time.Time
		wantErr error
	}{
		{"just issued", now, nil},
		{"one second before expiry", now.Add(2*time.Hour - time.Second), nil},
		{"at expiry", now.Add(2 * time.Hour), ErrSessionExpired},
		{"a day later", now.Add(24 * time.Hour), ErrSessionExpired},
	} {
		at := c.at
		s.now = func() time.Time { return at }
		sess, err := s.Verify(token)
		if !errors.Is(err, c.wantErr) || (err == nil && (sess.KeyID != "key_0123456789ab" || sess.ID == "" || !sess.Expires.Equal(expires))) {
			t.Errorf("%s: Verify = %+v, %v; want key_0123456789ab, %v", c.name, sess, err, c.wantErr)
		}
	}
}

func TestSessionTampering(t *testing.T) {
	now := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	s := fixedSessions(t, &now)
	token, _ := s.Issue("key_aaaaaaaaaaaa")
	payload, sig, _ := strings.Cut(token, ".")
	enc := base64.RawURLEncoding.EncodeToString

	other, err := NewSessions([]byte("another secret, 32 bytes or more!"), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other.now = s.now
	forged, _ := other.Issue("key_aaaaaaaaaaaa")

	for _, c := range []struct{ name, token string }{
		{"other key id, same signature", enc([]byte("2|key_bbbbbbbbbbbb|1740830400|sid")) + "." + sig},
		{"later expiry, same signature", enc([]byte("2|key_aaaaaaaaaaaa|1999999999|sid")) + "." + sig},
		{"signature changed", payload + "." + enc([]byte("not the signature of anything!!"))},
		{"signed with another secret", forged},
		{"no signature", payload},
		{"empty", ""},
		{"garbage", "%%%.%%%"},
		{"version 1, without a session id", func() string {
			p := enc([]byte("1|key_aaaaaaaaaaaa|1740830400"))
			return p + "." + enc(s.mac(p))
		}()},
		{"no session id", func() string {
			p := enc([]byte("2|key_aaaaaaaaaaaa|1740830400|"))
			return p + "." + enc(s.mac(p))
		}()},
		{"unknown version", func() string {
			p := enc([]byte("3|key_aaaaaaaaaaaa|1740830400|sid"))
			return p + "." + enc(s.mac(p))
		}()},
	} {
		if sess, err := s.Verify(c.token); !errors.Is(err, ErrSessionInvalid) {
			t.Errorf("%s: Verify = %+v, %v; want ErrSessionInvalid", c.name, sess, err)
		}
	}
}

func TestNewSessionsShortSecret(t *testing.T) {
	if _, err := NewSessions([]byte("too short"), time.Hour); err == nil {
		t.Error("a 9-byte secret was accepted")
	}
}

func TestLoadOrCreateSecret(t *testing.T) {
	dir := t.TempDir()
	first, err := LoadOrCreateSecret(dir)
	if err != nil {
		t.Fatal(err)
	}
	// 32 random bytes, hex: 64 characters.
	if len(first) != 64 {
		t.Errorf("secret of %d bytes, want 64", len(first))
	}
	fi, err := os.Stat(filepath.Join(dir, SecretFile))
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("secret file mode %o, want 600", perm)
	}
	second, err := LoadOrCreateSecret(dir)
	if err != nil {
		t.Fatal(err)
	}
	if string(second) != string(first) {
		t.Error("second call made a new secret instead of reading the stored one")
	}

	short := t.TempDir()
	if err := os.WriteFile(filepath.Join(short, SecretFile), []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateSecret(short); err == nil {
		t.Error("a 5-byte stored secret was accepted")
	}
}
