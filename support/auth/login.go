package auth

import (
	"html/template"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"
)

// Paths of the sign-in and sign-out handlers (see Public).
const (
	LoginPath  = "/login"
	LogoutPath = "/logout"
)

// Public returns the routes to serve without authentication
// (server.Options.Public): the sign-in page and sign-out.
func (k *Keyring) Public() map[string]http.Handler {
	return map[string]http.Handler{
		LoginPath:  http.HandlerFunc(k.serveLogin),
		LogoutPath: http.HandlerFunc(k.serveLogout),
	}
}

// LoginURL is where to send an unauthenticated browser: "/login?next=<the
// page asked for>" for a GET or HEAD of a UI page that accepts HTML while
// authentication and UI sign-in are on, else "" (answer 401). API, OTLP and
// operational paths never redirect: their clients are programs.
func (k *Keyring) LoginURL(r *http.Request) string {
	if k.cfg.Sessions == nil || !k.Enabled() {
		return ""
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return ""
	}
	if !strings.Contains(r.Header.Get("Accept"), "text/html") {
		return ""
	}
	p := r.URL.Path
	for _, prefix := range []string{"/api/", "/v1/", LoginPath, LogoutPath} {
		if strings.HasPrefix(p, prefix) {
			return ""
		}
	}
	switch p {
	case "/metrics", "/healthz", "/readyz":
		return ""
	}
	return LoginPath + "?next=" + url.QueryEscape(r.URL.RequestURI())
}

// LoginRedirect wraps a handler so that an unauthenticated browser request
// (see LoginURL) is redirected to the sign-in page instead of reaching it.
// Use it where the handler is not already behind the server's read
// authentication.
func (k *Keyring) LoginRedirect(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := k.AuthenticateRead(r); err != nil {
			if u := k.LoginURL(r); u != "" {
				http.Redirect(w, r, u, http.StatusFound)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// loginPage is the sign-in form: self-contained, no external assets.
var loginPage = template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign in · tally</title>
<style>
body{font:15px/1.5 system-ui,sans-serif;background:#f6f7f9;color:#1d2330;display:flex;min-height:100vh;margin:0;align-items:center;justify-content:center}
main{background:#fff;border:1px solid #dde1e7;border-radius:8px;padding:2rem;width:22rem}
h1{font-size:1.3rem;margin:0 0 1rem}
label{display:block;margin-bottom:.3rem}
input[type=password]{width:100%;box-sizing:border-box;padding:.5rem;font:inherit;font-family:monospace;border:1px solid #b8bfca;border-radius:4px}
button{margin-top:1rem;padding:.5rem 1.2rem;font:inherit;border:0;border-radius:4px;background:#2557d6;color:#fff;cursor:pointer}
.err{color:#b3261e;margin:0 0 1rem}
.note{color:#5b6473;font-size:.9rem;margin-top:1rem}
</style></head>
<body><main>
<h1>Sign in to tally</h1>
{{if .Error}}<p class="err" id="error" role="alert">{{.Error}}</p>{{end}}
{{if .Enabled}}<form method="post" action="/login">
<label for="key">API key with read scope</label>
<input type="password" id="key" name="key" autocomplete="current-password" autofocus required>
<input type="hidden" name="next" value="{{.Next}}">
<button type="submit">Sign in</button>
</form>
<p class="note">Create one with <code>tally keys create --project NAME --scope read</code>.</p>
{{else}}<p id="off">{{.Off}}</p><p><a href="/">Continue</a></p>{{end}}
</main></body></html>
`))

type loginView struct {
	Enabled bool
	Error   string
	Next    string
	Off     string
}

// serveLogin shows the sign-in form (GET) and signs in with a read key
// (POST): it sets the session cookie and redirects to the page asked for.
func (k *Keyring) serveLogin(w http.ResponseWriter, r *http.Request) {
	view := loginView{Enabled: true, Next: safeNext(r.URL.Query().Get("next"))}
	switch {
	case !k.Enabled():
		view.Enabled, view.Off = false, "Authentication is off: no API key is configured."
	case k.cfg.Sessions == nil:
		view.Enabled, view.Off = false, "UI sign-in is not configured on this server."
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		renderLogin(w, http.StatusOK, view)
		return
	case http.MethodPost:
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if !k.sameOrigin(r) {
		http.Error(w, "cross-origin sign-in refused", http.StatusForbidden)
		return
	}
	if !view.Enabled {
		renderLogin(w, http.StatusNotFound, view)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	if err := r.ParseForm(); err != nil {
		view.Error = "The form could not be read."
		renderLogin(w, http.StatusBadRequest, view)
		return
	}
	view.Next = safeNext(r.PostFormValue("next"))
	key, err := k.lookup(strings.TrimSpace(r.PostFormValue("key")))
	if err != nil {
		view.Error = "Unknown or revoked API key."
		renderLogin(w, http.StatusUnauthorized, view)
		return
	}
	if !key.Has(ScopeRead) {
		view.Error = "This key cannot read (it has no read scope); use a read key."
		renderLogin(w, http.StatusForbidden, view)
		return
	}
	token, expires := k.cfg.Sessions.Issue(key.ID)
	http.SetCookie(w, &http.Cookie{
		Name:     SessionCookie,
		Value:    token,
		Path:     "/",
		Expires:  expires,
		MaxAge:   int(k.cfg.Sessions.TTL().Seconds()),
		HttpOnly: true,
		Secure:   k.overTLS(r),
		SameSite: http.SameSiteLaxMode,
	})
	http.Redirect(w, r, view.Next, http.StatusSeeOther)
}

// serveLogout signs out (POST): it revokes the session token on the server,
// so that no copy of it works any more, clears the cookie and returns to the
// sign-in page.
func (k *Keyring) serveLogout(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "method not allowed: sign out with POST", http.StatusMethodNotAllowed)
		return
	}
	if !k.sameOrigin(r) {
		http.Error(w, "cross-origin sign-out refused", http.StatusForbidden)
		return
	}
	if c, err := r.Cookie(SessionCookie); err == nil {
		if err := k.revokeSession(r.Context(), c.Value); err != nil {
			// Refused here already; other replicas learn of it only once
			// storing works, so say so.
			k.log.Error("sign-out: the session is revoked on this server only", "err", err)
		}
	}
	http.SetCookie(w, &http.Cookie{
		Name:     SessionCookie,
		Value:    "",
		Path:     "/",
		MaxAge:   -1,
		Expires:  time.Unix(0, 0),
		HttpOnly: true,
		Secure:   k.overTLS(r),
		SameSite: http.SameSiteLaxMode,
	})
	http.Redirect(w, r, LoginPath, http.StatusSeeOther)
}

func renderLogin(w http.ResponseWriter, status int, view loginView) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'")
	w.WriteHeader(status)
	_ = loginPage.Execute(w, view) // the client went away, or nothing to do
}

// safeNext keeps a post-sign-in redirect on this site: a plain local path,
// never a URL to another host ("//evil", "/\\evil", "https://…"). The check
// is made on the path as http.Redirect cleans it ("/./\\evil" becomes
// "/\\evil", which browsers read as "//evil"), and the cleaned form is what
// is returned; anything doubtful becomes "/".
func safeNext(next string) string {
	if next == "" || next[0] != '/' || strings.ContainsFunc(next, notPlainURLRune) {
		return "/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return "/"
	}
	raw, rest := next, ""
	if i := strings.IndexAny(next, "?#"); i >= 0 {
		raw, rest = next[:i], next[i:]
	}
	if strings.Contains(raw, "//") {
		return "/"
	}
	cleaned := path.Clean(raw)
	if strings.HasSuffix(raw, "/") && cleaned != "/" {
		cleaned += "/"
	}
	decoded, err := url.PathUnescape(cleaned)
	if err != nil || !strings.HasPrefix(cleaned, "/") || strings.HasPrefix(cleaned, "//") ||
		strings.HasPrefix(decoded, "//") || strings.ContainsFunc(decoded, notPlainURLRune) || strings.HasPrefix(cleaned, LoginPath) {
		return "/"
	}
	return cleaned + rest
}

// notPlainURLRune reports characters that have no place in a local path
// and that browsers strip or reinterpret: backslashes, spaces and control
// characters.
func notPlainURLRune(r rune) bool {
	return r == '\\' || r <= ' ' || r == 0x7f
}

// sameOrigin refuses form posts from other sites (login CSRF): a browser
// sends Origin with every POST; when it names another origin, refuse. The
// host is the request's, or X-Forwarded-Host when a trusted proxy sent it,
// and the scheme https when the browser reached tally over TLS (directly or
// as a trusted proxy says): an http:// page on the same host is another
// origin, one a network attacker can serve.
func (k *Keyring) sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" || origin == "null" {
		return origin == ""
	}
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	host := r.Host
	if fwd := r.Header.Get("X-Forwarded-Host"); fwd != "" && k.fromTrustedProxy(r) {
		host = fwd
	}
	scheme := "http"
	if k.overTLS(r) {
		scheme = "https"
	}
	return strings.EqualFold(u.Scheme, scheme) && strings.EqualFold(u.Host, host)
}

// overTLS reports whether the browser reached tally over HTTPS, directly or
// through a trusted proxy that says so.
func (k *Keyring) overTLS(r *http.Request) bool {
	return r.TLS != nil || (strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") && k.fromTrustedProxy(r))
}
