package auth

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tallyhq/tally/support/access"
)

// fakeSource is a KeySource whose keys the test sets.
type fakeSource struct {
	keys []Key
	err  error
}

func (f *fakeSource) List(context.Context) ([]Key, error) { return f.keys, f.err }

func newTestKeyring(t *testing.T, src *fakeSource, static ...Key) *Keyring {
	t.Helper()
	sessions, err := NewSessions(testSecret, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	k, err := NewKeyring(context.Background(), Config{Static: static, Source: src, Sessions: sessions})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func bearerRequest(key string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/api/v1/runs", nil)
	if key != "" {
		r.Header.Set("Authorization", "Bearer "+key)
	}
	return r
}

// outcome names what an authentication answered: a project, or the status
// the server turns the error into.
func outcome(project string, err error) string {
	switch {
	case err == nil:
		return "project " + project
	case errors.Is(err, access.ErrForbidden):
		return "403"
	case errors.Is(err, access.ErrUnauthenticated):
		return "401"
	}
	return "error " + err.Error()
}

func TestKeyringScopes(t *testing.T) {
	src := &fakeSource{keys: []Key{
		{ID: "key_ingest", Project: "alpha", Scopes: []Scope{ScopeIngest}, Hash: Hash("tly_ingest")},
		{ID: "key_read", Project: "alpha", Scopes: []Scope{ScopeRead}, Hash: Hash("tly_read")},
		{ID: "key_both", Project: "beta", Scopes: []Scope{ScopeIngest, ScopeRead}, Hash: Hash("tly_both")},
		{ID: "key_gone", Project: "alpha", Scopes: []Scope{ScopeIngest, ScopeRead}, Hash: Hash("tly_gone"),
			RevokedAt: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)},
	}}
	static, err := ParseStatic("gamma:read:" + Hash("tly_static"))
	if err != nil {
		t.Fatal(err)
	}
	k := newTestKeyring(t, src, static)
	for _, c := range []struct {
		name, header, ingest, read string
	}{
		{"no key", "", "401", "401"},
		{"ingest key", "Bearer tly_ingest", "project alpha", "403"},
		{"read key", "Bearer tly_read", "403", "project alpha"},
		{"both scopes", "Bearer tly_both", "project beta", "project beta"},
		{"lower-case scheme", "bearer tly_both", "project beta", "project beta"},
		{"static read key", "Bearer tly_static", "403", "project gamma"},
		{"revoked key", "Bearer tly_gone", "401", "401"},
		{"unknown key", "Bearer tly_nope", "401", "401"},
		{"basic auth", "Basic dXNlcjpwYXNz", "401", "401"},
		{"empty bearer", "Bearer ", "401", "401"},
	} {
		r := bearerRequest("")
		if c.header != "" {
			r.Header.Set("Authorization", c.header)
		}
		if got := outcome(k.AuthenticateIngest(r)); got != c.ingest {
			t.Errorf("%s: ingest %s, want %s", c.name, got, c.ingest)
		}
		if got := outcome(k.AuthenticateRead(r)); got != c.read {
			t.Errorf("%s: read %s, want %s", c.name, got, c.read)
		}
	}
}

func TestKeyringOffWithoutKeys(t *testing.T) {
	src := &fakeSource{}
	k := newTestKeyring(t, src)
	if k.Enabled() {
		t.Fatal("enabled with no key at all")
	}
	r := bearerRequest("")
	if got := outcome(k.AuthenticateIngest(r)); got != "project default" {
		t.Errorf("ingest without keys: %s, want project default", got)
	}
	if got := outcome(k.AuthenticateRead(r)); got != "project default" {
		t.Errorf("read without keys: %s, want project default", got)
	}

	// The first key turns authentication on at the next refresh.
	src.keys = []Key{{ID: "key_1", Project: "alpha", Scopes: []Scope{ScopeRead}, Hash: Hash("tly_1")}}
	if err := k.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := outcome(k.AuthenticateRead(r)); got != "401" {
		t.Errorf("read without a key once a key exists: %s, want 401", got)
	}

	// Revoking the only key must not switch authentication off again.
	src.keys[0].RevokedAt = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := k.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !k.Enabled() {
		t.Error("revoking the only key switched authentication off")
	}
	if got := outcome(k.AuthenticateRead(bearerRequest("tly_1"))); got != "401" {
		t.Errorf("revoked key: %s, want 401", got)
	}
}

func TestKeyringRefreshFailureKeepsKeys(t *testing.T) {
	src := &fakeSource{keys: []Key{{ID: "key_1", Project: "alpha", Scopes: []Scope{ScopeRead}, Hash: Hash("tly_1")}}}
	k := newTestKeyring(t, src)
	src.keys, src.err = nil, errors.New("clickhouse down")
	if err := k.Refresh(context.Background()); err == nil {
		t.Fatal("Refresh hid the source's error")
	}
	if got := outcome(k.AuthenticateRead(bearerRequest("tly_1"))); got != "project alpha" {
		t.Errorf("after a failed refresh: %s, want project alpha (last keys kept)", got)
	}
	if _, err := NewKeyring(context.Background(), Config{Source: src}); err == nil {
		t.Error("NewKeyring started although the keys could not be read")
	}
}

func TestKeyringSession(t *testing.T) {
	src := &fakeSource{keys: []Key{
		{ID: "key_read", Project: "alpha", Scopes: []Scope{ScopeRead}, Hash: Hash("tly_read")},
		{ID: "key_ingest", Project: "alpha", Scopes: []Scope{ScopeIngest}, Hash: Hash("tly_ingest")},
	}}
	k := newTestKeyring(t, src)
	withCookie := func(token string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/api/v1/runs", nil)
		r.AddCookie(&http.Cookie{Name: SessionCookie, Value: token})
		return r
	}
	readToken, _ := k.cfg.Sessions.Issue("key_read")
	ingestToken, _ := k.cfg.Sessions.Issue("key_ingest")
	unknownToken, _ := k.cfg.Sessions.Issue("key_unknown")
	for _, c := range []struct{ name, token, want string }{
		{"read key's session", readToken, "project alpha"},
		{"ingest key's session", ingestToken, "403"},
		{"session of an unknown key", unknownToken, "401"},
		{"tampered session", readToken + "x", "401"},
	} {
		if got := outcome(k.AuthenticateRead(withCookie(c.token))); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
	// A session never authenticates ingest.
	if got := outcome(k.AuthenticateIngest(withCookie(readToken))); got != "401" {
		t.Errorf("ingest with a session cookie: %s, want 401", got)
	}
	// A bad bearer key is not rescued by a good cookie.
	r := withCookie(readToken)
	r.Header.Set("Authorization", "Bearer tly_nope")
	if got := outcome(k.AuthenticateRead(r)); got != "401" {
		t.Errorf("bad bearer with a good cookie: %s, want 401", got)
	}
	// Revoking the key ends its sessions at the next refresh.
	src.keys[0].RevokedAt = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := k.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := outcome(k.AuthenticateRead(withCookie(readToken))); got != "401" {
		t.Errorf("session of a revoked key: %s, want 401", got)
	}
}

func TestLoginURL(t *testing.T) {
	k := newTestKeyring(t, &fakeSource{keys: []Key{{ID: "key_1", Project: "a", Scopes: []Scope{ScopeRead}, Hash: Hash("x")}}})
	const html = "text/html,application/xhtml+xml,*/*;q=0.8"
	for _, c := range []struct{ method, target, accept, want string }{
		{"GET", "/", html, "/login?next=%2F"},
		{"GET", "/runs/abc?since=1h", html, "/login?next=%2Fruns%2Fabc%3Fsince%3D1h"},
		{"HEAD", "/costs", html, "/login?next=%2Fcosts"},
		{"GET", "/", "application/json", ""},
		{"GET", "/", "*/*", ""},
		{"POST", "/", html, ""},
		{"GET", "/api/v1/runs", html, ""},
		{"GET", "/v1/traces", html, ""},
		{"GET", "/metrics", html, ""},
		{"GET", "/login", html, ""},
	} {
		r := httptest.NewRequest(c.method, c.target, nil)
		r.Header.Set("Accept", c.accept)
		if got := k.LoginURL(r); got != c.want {
			t.Errorf("%s %s (Accept %s): %q, want %q", c.method, c.target, c.accept, got, c.want)
		}
	}
	off := newTestKeyring(t, &fakeSource{})
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("Accept", html)
	if got := off.LoginURL(r); got != "" {
		t.Errorf("with authentication off: %q, want no redirect", got)
	}
}

func TestSafeNext(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"/runs/abc?x=1", "/runs/abc?x=1"},
		{"", "/"},
		{"//evil.example/x", "/"},
		{"/\\evil.example", "/"},
		{"https://evil.example/", "/"},
		{"runs", "/"},
		{"/login?next=/x", "/"},
		// http.Redirect cleans the path: what it cleans to must be checked.
		{"/./\\evil.example", "/"},
		{"/.//evil.example", "/"},
		{"/a/..//evil.example", "/"},
		{"/runs/../\\evil.example", "/"},
		{"/%5Cevil.example", "/"},
		{"/%2F/evil.example", "/"},
		{"/runs\\x", "/"},
		{"/\tevil", "/"},
		{"/./login", "/"},
		{"/runs/./abc/../def?x=1#top", "/runs/def?x=1#top"},
		{"/costs/", "/costs/"},
	} {
		if got := safeNext(c.in); got != c.want {
			t.Errorf("safeNext(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestLoginForm(t *testing.T) {
	k := newTestKeyring(t, &fakeSource{keys: []Key{
		{ID: "key_read", Project: "alpha", Scopes: []Scope{ScopeRead}, Hash: Hash("tly_read")},
		{ID: "key_ingest", Project: "alpha", Scopes: []Scope{ScopeIngest}, Hash: Hash("tly_ingest")},
	}})
	login := k.Public()[LoginPath]
	post := func(key, next string, header map[string]string) *httptest.ResponseRecorder {
		form := url.Values{"key": {key}, "next": {next}}
		r := httptest.NewRequest(http.MethodPost, "http://tally.example/login", strings.NewReader(form.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for h, v := range header {
			r.Header.Set(h, v)
		}
		w := httptest.NewRecorder()
		login.ServeHTTP(w, r)
		return w
	}
	for _, c := range []struct {
		name, key, next string
		header          map[string]string
		status          int
		location        string
		cookie          bool
		secure          bool
	}{
		{"read key", "tly_read", "/runs", nil, http.StatusSeeOther, "/runs", true, false},
		{"X-Forwarded-Proto from a client that is no proxy", "tly_read", "", map[string]string{"X-Forwarded-Proto": "https"}, http.StatusSeeOther, "/", true, false},
		{"same-origin form", "tly_read", "/", map[string]string{"Origin": "http://tally.example"}, http.StatusSeeOther, "/", true, false},
		{"open redirect refused", "tly_read", "//evil.example", nil, http.StatusSeeOther, "/", true, false},
		{"open redirect through a cleaned path", "tly_read", "/./\\evil.example", nil, http.StatusSeeOther, "/", true, false},
		{"ingest key", "tly_ingest", "/", nil, http.StatusForbidden, "", false, false},
		{"unknown key", "tly_nope", "/", nil, http.StatusUnauthorized, "", false, false},
		{"cross-site form", "tly_read", "/", map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden, "", false, false},
	} {
		w := post(c.key, c.next, c.header)
		if w.Code != c.status || w.Header().Get("Location") != c.location {
			t.Errorf("%s: %d Location %q, want %d %q", c.name, w.Code, w.Header().Get("Location"), c.status, c.location)
		}
		cookies := w.Result().Cookies()
		if !c.cookie {
			if len(cookies) != 0 {
				t.Errorf("%s: set cookies %v, want none", c.name, cookies)
			}
			continue
		}
		if len(cookies) != 1 {
			t.Fatalf("%s: %d cookies, want 1", c.name, len(cookies))
		}
		ck := cookies[0]
		// TTL 1h = 3600 s.
		if ck.Name != SessionCookie || !ck.HttpOnly || ck.SameSite != http.SameSiteLaxMode || ck.Secure != c.secure ||
			ck.Path != "/" || ck.MaxAge != 3600 {
			t.Errorf("%s: cookie %+v, want %s HttpOnly SameSite=Lax Secure=%v Path=/ Max-Age=3600", c.name, ck, SessionCookie, c.secure)
		}
		if sess, err := k.cfg.Sessions.Verify(ck.Value); err != nil || sess.KeyID != "key_read" {
			t.Errorf("%s: cookie verifies as %+v, %v; want key_read", c.name, sess, err)
		}
		if strings.Contains(ck.Value, "tly_read") {
			t.Errorf("%s: cookie holds the key", c.name)
		}
	}

	get := httptest.NewRecorder()
	login.ServeHTTP(get, httptest.NewRequest(http.MethodGet, "/login?next=/costs", nil))
	body := get.Body.String()
	if get.Code != http.StatusOK || !strings.Contains(body, `<form method="post" action="/login">`) ||
		!strings.Contains(body, `name="next" value="/costs"`) {
		t.Errorf("GET /login: %d\n%s", get.Code, body)
	}
	if strings.Contains(body, "http://") || strings.Contains(body, "https://") || strings.Contains(body, "<script") {
		t.Error("login page loads something from elsewhere or runs script")
	}

	logout := httptest.NewRecorder()
	k.Public()[LogoutPath].ServeHTTP(logout, httptest.NewRequest(http.MethodPost, "/logout", nil))
	cookies := logout.Result().Cookies()
	if logout.Code != http.StatusSeeOther || logout.Header().Get("Location") != LoginPath ||
		len(cookies) != 1 || cookies[0].Name != SessionCookie || cookies[0].MaxAge >= 0 {
		t.Errorf("POST /logout: %d %q cookies %+v; want 303 to /login clearing %s", logout.Code, logout.Header().Get("Location"), cookies, SessionCookie)
	}
}

// signIn posts the sign-in form with key and returns the session cookie.
func signIn(t *testing.T, k *Keyring, key string) *http.Cookie {
	t.Helper()
	form := url.Values{"key": {key}}
	r := httptest.NewRequest(http.MethodPost, "http://tally.example/login", strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	w := httptest.NewRecorder()
	k.Public()[LoginPath].ServeHTTP(w, r)
	cookies := w.Result().Cookies()
	if w.Code != http.StatusSeeOther || len(cookies) != 1 {
		t.Fatalf("sign-in: %d, cookies %v", w.Code, cookies)
	}
	return cookies[0]
}

// TestLogoutRevokesSession: after sign-out the session token itself is
// refused, not only the browser's cookie cleared — a copy of the token
// (another tab's jar, a stolen cookie) no longer works.
func TestLogoutRevokesSession(t *testing.T) {
	k := newTestKeyring(t, &fakeSource{keys: []Key{
		{ID: "key_read", Project: "alpha", Scopes: []Scope{ScopeRead}, Hash: Hash("tly_read")},
	}})
	withCookie := func(c *http.Cookie) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/api/v1/runs", nil)
		r.AddCookie(c)
		return r
	}
	kept := signIn(t, k, "tly_read")
	other := signIn(t, k, "tly_read") // another browser, same key
	if got := outcome(k.AuthenticateRead(withCookie(kept))); got != "project alpha" {
		t.Fatalf("signed in: %s, want project alpha", got)
	}

	r := httptest.NewRequest(http.MethodPost, "/logout", nil)
	r.AddCookie(kept)
	w := httptest.NewRecorder()
	k.Public()[LogoutPath].ServeHTTP(w, r)
	if w.Code != http.StatusSeeOther {
		t.Fatalf("sign-out: %d, want 303", w.Code)
	}
	if got := outcome(k.AuthenticateRead(withCookie(kept))); got != "401" {
		t.Errorf("token after sign-out: %s, want 401", got)
	}
	if got := outcome(k.AuthenticateRead(withCookie(other))); got != "project alpha" {
		t.Errorf("another session of the same key after sign-out: %s, want project alpha", got)
	}
	// A refresh keeps the revocation.
	if err := k.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := outcome(k.AuthenticateRead(withCookie(kept))); got != "401" {
		t.Errorf("token after sign-out and a refresh: %s, want 401", got)
	}
}

// TestForwardedHeadersFromUntrustedClient: X-Forwarded-Host and
// X-Forwarded-Proto from a client that is not a configured proxy are
// ignored, so a forged pair passes neither the sign-in CSRF check nor marks
// the cookie Secure.
func TestForwardedHeadersFromUntrustedClient(t *testing.T) {
	k := newTestKeyring(t, &fakeSource{keys: []Key{
		{ID: "key_read", Project: "alpha", Scopes: []Scope{ScopeRead}, Hash: Hash("tly_read")},
	}})
	form := url.Values{"key": {"tly_read"}}
	r := httptest.NewRequest(http.MethodPost, "http://tally.example/login", strings.NewReader(form.Encode()))
	r.RemoteAddr = "203.0.113.7:40000"
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Origin", "https://evil.example")
	r.Header.Set("X-Forwarded-Host", "evil.example")
	r.Header.Set("X-Forwarded-Proto", "https")
	w := httptest.NewRecorder()
	k.Public()[LoginPath].ServeHTTP(w, r)
	if w.Code != http.StatusForbidden {
		t.Errorf("cross-site sign-in with forged X-Forwarded-Host: %d, want 403", w.Code)
	}
}

// TestForwardedHeadersFromTrustedProxy: a configured proxy's X-Forwarded-Host
// and -Proto are believed; the same headers from any other address are not.
func TestForwardedHeadersFromTrustedProxy(t *testing.T) {
	proxies, err := ParseTrustedProxies([]string{"10.0.0.0/8", "192.0.2.10", "::1"})
	if err != nil {
		t.Fatal(err)
	}
	k, err := NewKeyring(context.Background(), Config{
		Source:         &fakeSource{keys: []Key{{ID: "key_read", Project: "alpha", Scopes: []Scope{ScopeRead}, Hash: Hash("tly_read")}}},
		Sessions:       newTestKeyring(t, &fakeSource{}).cfg.Sessions,
		TrustedProxies: proxies,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, remote string
		status       int
		secure       bool
		origin       string // default https://tally.example
	}{
		{"proxy in a CIDR", "10.1.2.3:5000", http.StatusSeeOther, true, ""},
		{"proxy by address", "192.0.2.10:5000", http.StatusSeeOther, true, ""},
		{"IPv6 proxy", "[::1]:5000", http.StatusSeeOther, true, ""},
		{"client outside the proxies", "192.0.2.11:5000", http.StatusForbidden, false, ""},
		// Issue #41: the host alone matched, so a page served over plain
		// http on the same host passed the check behind an https proxy.
		{"an http origin behind an https proxy", "10.1.2.3:5000", http.StatusForbidden, false, "http://tally.example"},
	} {
		if c.origin == "" {
			c.origin = "https://tally.example"
		}
		form := url.Values{"key": {"tly_read"}}
		r := httptest.NewRequest(http.MethodPost, "http://10.0.0.5:4318/login", strings.NewReader(form.Encode()))
		r.RemoteAddr = c.remote
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.Header.Set("Origin", c.origin)
		r.Header.Set("X-Forwarded-Host", "tally.example")
		r.Header.Set("X-Forwarded-Proto", "https")
		w := httptest.NewRecorder()
		k.Public()[LoginPath].ServeHTTP(w, r)
		if w.Code != c.status {
			t.Errorf("%s: %d, want %d", c.name, w.Code, c.status)
			continue
		}
		if cookies := w.Result().Cookies(); c.status == http.StatusSeeOther && (len(cookies) != 1 || cookies[0].Secure != c.secure) {
			t.Errorf("%s: cookies %+v, want one with Secure=%v", c.name, cookies, c.secure)
		}
	}
	for _, bad := range []string{"10.0.0.0/33", "proxy.example", "10.0.0.1:80"} {
		if _, err := ParseTrustedProxies([]string{bad}); err == nil {
			t.Errorf("ParseTrustedProxies(%q) accepted", bad)
		}
	}
}

// fakeRevocations is a SessionRevocations shared by two keyrings, as
// ClickHouse is by two replicas.
type fakeRevocations struct{ m map[string]time.Time }

func (f *fakeRevocations) RevokeSession(_ context.Context, id string, exp time.Time) error {
	f.m[id] = exp
	return nil
}

func (f *fakeRevocations) RevokedSessions(context.Context) (map[string]time.Time, error) {
	return maps.Clone(f.m), nil
}

// TestLogoutRevokesSessionOnEveryReplica: a sign-out on one server is
// refused by another sharing the revocations after its refresh.
func TestLogoutRevokesSessionOnEveryReplica(t *testing.T) {
	src := &fakeSource{keys: []Key{{ID: "key_read", Project: "alpha", Scopes: []Scope{ScopeRead}, Hash: Hash("tly_read")}}}
	sessions := newTestKeyring(t, &fakeSource{}).cfg.Sessions
	shared := &fakeRevocations{m: map[string]time.Time{}}
	replica := func() *Keyring {
		k, err := NewKeyring(context.Background(), Config{Source: src, Sessions: sessions, Revocations: shared})
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	a, b := replica(), replica()
	cookie := signIn(t, a, "tly_read")
	r := httptest.NewRequest(http.MethodPost, "/logout", nil)
	r.AddCookie(cookie)
	a.Public()[LogoutPath].ServeHTTP(httptest.NewRecorder(), r)
	if len(shared.m) != 1 {
		t.Fatalf("sign-out stored %d revocations, want 1", len(shared.m))
	}
	if err := b.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	read := httptest.NewRequest(http.MethodGet, "/api/v1/runs", nil)
	read.AddCookie(cookie)
	if got := outcome(b.AuthenticateRead(read)); got != "401" {
		t.Errorf("the other replica after sign-out: %s, want 401", got)
	}
}
