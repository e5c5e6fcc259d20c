package auth_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/tallyhq/tally/internal/tallytest"
	"github.com/tallyhq/tally/internal/testenv"
	"github.com/tallyhq/tally/support/access"
	"github.com/tallyhq/tally/support/auth"
)

// TestMain stops the ClickHouse server the package's integration tests share.
func TestMain(m *testing.M) { testenv.Main(m) }

// env is a running tally with authentication on: managed keys of projects
// alpha and beta in ClickHouse, and a static key of project gamma.
type env struct {
	tally    *tallytest.Instance
	keyring  *auth.Keyring
	sessions *auth.Sessions
	store    *auth.Store
	keys     map[string]string // name → plaintext key
	ids      map[string]string // name → key id
}

const staticGammaKey = "tly_gamma_static_test_key_not_secret"

func start(t *testing.T) *env {
	t.Helper()
	e := &env{keys: map[string]string{}, ids: map[string]string{}}
	ctx := context.Background()
	e.tally = tallytest.Start(t, func(o *tallytest.Config) {
		e.store = auth.NewStore(o.Store)
		for _, k := range []struct{ name, project, scopes string }{
			{"alpha-ingest", "alpha", "ingest"},
			{"alpha-read", "alpha", "read"},
			{"beta-ingest", "beta", "ingest"},
			{"beta-read", "beta", "read"},
			{"ops-metrics", "ops", "metrics"},
		} {
			scopes, err := auth.ParseScopes(k.scopes)
			if err != nil {
				t.Fatal(err)
			}
			key, plaintext, err := e.store.Create(ctx, k.project, scopes, k.name)
			if err != nil {
				t.Fatalf("create key %s: %v", k.name, err)
			}
			e.keys[k.name], e.ids[k.name] = plaintext, key.ID
		}
		static, err := auth.ParseStatic("gamma:ingest,read:" + auth.Hash(staticGammaKey))
		if err != nil {
			t.Fatal(err)
		}
		sessions, err := auth.NewSessions([]byte("integration-test-session-secret-32b"), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		e.sessions = sessions
		// Refresh is forced by the tests (Refresh), never waited for.
		e.keyring, err = auth.NewKeyring(ctx, auth.Config{
			Static: []auth.Key{static}, Source: e.store, Refresh: time.Hour, Sessions: sessions, Revocations: e.store,
		})
		if err != nil {
			t.Fatal(err)
		}
		o.Server.Auth = e.keyring
		o.Server.Public = e.keyring.Public()
		o.Server.UI = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/api/") { // an API route this build lacks
				http.NotFound(w, r)
				return
			}
			w.WriteHeader(http.StatusOK) // gin's NoRoute would default to 404
			fmt.Fprint(w, "ui page")
		})
	})
	return e
}

// sent is what export delivered: the run's trace id and its tool spans' ids.
type sent struct {
	traceID string
	toolIDs []string
}

// export sends one run of service through the OTel SDK's OTLP/HTTP exporter
// with key as bearer token ("" for none) and returns what it sent, or the
// exporter's error (which names the HTTP status). The run is an agent span
// with a chat call and `tools` tool calls under it: 2 + tools spans.
func export(t *testing.T, e *env, key, service string, tools int) (sent, error) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", service))))
	tr := tp.Tracer("auth-test")
	var s sent
	base := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	at := func(ms int) trace.SpanStartEventOption {
		return trace.WithTimestamp(base.Add(time.Duration(ms) * time.Millisecond))
	}
	ctx, root := tr.Start(context.Background(), "invoke_agent "+service, at(0),
		trace.WithAttributes(attribute.String("gen_ai.operation.name", "invoke_agent"), attribute.String("gen_ai.agent.name", service)))
	_, chat := tr.Start(ctx, "chat gpt-4o", at(10), trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("gen_ai.provider.name", "openai"),
		attribute.String("gen_ai.request.model", "gpt-4o"),
		attribute.Int("gen_ai.usage.input_tokens", 100),
		attribute.Int("gen_ai.usage.output_tokens", 10)))
	chat.End(trace.WithTimestamp(base.Add(100 * time.Millisecond)))
	for i := range tools {
		_, tool := tr.Start(ctx, "execute_tool lookup", at(200+100*i), trace.WithAttributes(
			attribute.String("gen_ai.operation.name", "execute_tool"),
			attribute.String("gen_ai.tool.name", "lookup"),
			attribute.String("gen_ai.tool.call.id", fmt.Sprintf("call_%d", i)),
			attribute.String("gen_ai.tool.call.arguments", fmt.Sprintf(`{"n":%d}`, i))))
		tool.End(trace.WithTimestamp(base.Add(time.Duration(250+100*i) * time.Millisecond)))
		s.toolIDs = append(s.toolIDs, tool.SpanContext().SpanID().String())
	}
	root.End(trace.WithTimestamp(base.Add(time.Second)))

	opts := []otlptracehttp.Option{
		otlptracehttp.WithEndpointURL(e.tally.URL + "/v1/traces"),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}),
	}
	if key != "" {
		opts = append(opts, otlptracehttp.WithHeaders(map[string]string{"Authorization": "Bearer " + key}))
	}
	exp, err := otlptracehttp.New(context.Background(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer exp.Shutdown(context.Background()) //nolint:errcheck // nothing buffered
	s.traceID = root.SpanContext().TraceID().String()
	return s, exp.ExportSpans(context.Background(), rec.Ended())
}

// get fetches path with key as bearer token ("" for none).
func get(t *testing.T, e *env, path, key string) (int, []byte) {
	t.Helper()
	return do(t, e, http.MethodGet, path, key, "")
}

// do sends one request with the key (none when empty) and returns the
// status and body.
func do(t *testing.T, e *env, method, path, key, body string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.tally.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, answer
}

// runIDs lists the trace ids of the runs a key sees.
func runIDs(t *testing.T, e *env, key string) []string {
	t.Helper()
	code, body := get(t, e, "/api/v1/runs?since=24h", key)
	if code != http.StatusOK {
		t.Fatalf("GET /api/v1/runs: %d %s", code, body)
	}
	var page struct {
		Runs []struct {
			TraceID string `json:"trace_id"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		t.Fatalf("decode runs: %v\n%s", err, body)
	}
	ids := []string{}
	for _, r := range page.Runs {
		ids = append(ids, r.TraceID)
	}
	return ids
}

func wantStatus(t *testing.T, err error, status string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), status) {
		t.Errorf("export: %v, want a %s answer", err, status)
	}
}

func TestAuthEndToEnd(t *testing.T) {
	e := start(t)

	t.Run("no key", func(t *testing.T) {
		_, err := export(t, e, "", "svc-anon", 1)
		wantStatus(t, err, "401")
		code, _ := get(t, e, "/api/v1/runs", "")
		if code != http.StatusUnauthorized {
			t.Errorf("GET /api/v1/runs without a key: %d, want 401", code)
		}
		_, err = export(t, e, "tly_made_up_key", "svc-anon", 1)
		wantStatus(t, err, "401")
		if code, _ := get(t, e, "/api/v1/runs", "tly_made_up_key"); code != http.StatusUnauthorized {
			t.Errorf("GET /api/v1/runs with an unknown key: %d, want 401", code)
		}
	})

	t.Run("scopes", func(t *testing.T) {
		if code, _ := get(t, e, "/api/v1/runs", e.keys["alpha-ingest"]); code != http.StatusForbidden {
			t.Errorf("ingest key reading runs: %d, want 403", code)
		}
		_, err := export(t, e, e.keys["alpha-read"], "svc-alpha", 1)
		wantStatus(t, err, "403")
	})

	// Alpha sends a run of 2 + 1 = 3 spans, beta one of 2 + 2 = 4 spans.
	alpha, err := export(t, e, e.keys["alpha-ingest"], "svc-alpha", 1)
	if err != nil {
		t.Fatalf("alpha's ingest key: %v", err)
	}
	beta, err := export(t, e, e.keys["beta-ingest"], "svc-beta", 2)
	if err != nil {
		t.Fatalf("beta's ingest key: %v", err)
	}

	t.Run("projects are isolated", func(t *testing.T) {
		for _, c := range []struct {
			key  string
			want string
		}{
			{"alpha-read", alpha.traceID},
			{"beta-read", beta.traceID},
		} {
			if got := runIDs(t, e, e.keys[c.key]); len(got) != 1 || got[0] != c.want {
				t.Errorf("%s sees runs %v, want only [%s]", c.key, got, c.want)
			}
		}
		betaRun := "/api/v1/runs/" + beta.traceID
		for _, path := range []string{betaRun, betaRun + "/fixture"} {
			if code, body := get(t, e, path, e.keys["beta-read"]); code != http.StatusOK {
				t.Errorf("beta reading its own %s: %d %s", path, code, body)
			}
			if code, body := get(t, e, path, e.keys["alpha-read"]); code != http.StatusNotFound {
				t.Errorf("alpha reading beta's %s: %d %s, want 404", path, code, body)
			}
		}
		// Span content answers 200 with an empty list for a span the caller
		// cannot see (as for one that does not exist): beta's first tool call
		// carried the arguments {"n":0}, which only beta may read.
		content := betaRun + "/spans/" + beta.toolIDs[0]
		contentItems := func(key string) (int, []string) {
			code, body := get(t, e, content, e.keys[key])
			var sc struct {
				Content []struct{ Value string } `json:"content"`
			}
			if code == http.StatusOK {
				if err := json.Unmarshal(body, &sc); err != nil {
					t.Fatalf("decode span content: %v\n%s", err, body)
				}
			}
			values := []string{}
			for _, c := range sc.Content {
				values = append(values, c.Value)
			}
			return code, values
		}
		if code, values := contentItems("beta-read"); code != http.StatusOK || len(values) != 1 || values[0] != `{"n":0}` {
			t.Errorf("beta reading its span content: %d %q, want 200 [{\"n\":0}]", code, values)
		}
		if code, values := contentItems("alpha-read"); (code != http.StatusOK && code != http.StatusNotFound) || len(values) != 0 {
			t.Errorf("alpha reading beta's span content: %d %q, want nothing", code, values)
		}
	})

	// Posting an outcome writes: it takes the ingest scope, within the
	// key's project; reading outcomes takes the read scope.
	t.Run("outcomes take the ingest scope", func(t *testing.T) {
		path, body := "/api/v1/runs/"+alpha.traceID+"/outcomes", `{"name":"resolved","passed":true}`
		for _, c := range []struct {
			key  string
			code int
		}{
			{"", http.StatusUnauthorized},
			{e.keys["alpha-read"], http.StatusForbidden},
			{e.keys["beta-ingest"], http.StatusNotFound}, // beta cannot see alpha's run
			{e.keys["alpha-ingest"], http.StatusOK},
		} {
			if code, b := do(t, e, http.MethodPost, path, c.key, body); code != c.code {
				t.Errorf("post outcome: %d %s, want %d", code, b, c.code)
			}
		}
		if code, b := get(t, e, path, e.keys["alpha-read"]); code != http.StatusOK || !strings.Contains(string(b), `"resolved"`) {
			t.Errorf("alpha reading its outcomes: %d %s", code, b)
		}
		if code, _ := get(t, e, path, e.keys["alpha-ingest"]); code != http.StatusForbidden {
			t.Errorf("ingest key reading outcomes: %d, want 403", code)
		}
	})

	t.Run("search is isolated", func(t *testing.T) {
		// Alpha's run and beta's both carry tool calls; each key finds
		// its own project's run only, whatever the query names.
		names := func(key, q string) []string {
			t.Helper()
			code, body := get(t, e, "/api/v1/search?since=24h&q="+url.QueryEscape(q), e.keys[key])
			if code != http.StatusOK {
				t.Fatalf("%s searching %s: %d %s", key, q, code, body)
			}
			var page struct {
				Runs []struct {
					TraceID string `json:"trace_id"`
				} `json:"runs"`
			}
			if err := json.Unmarshal(body, &page); err != nil {
				t.Fatal(err)
			}
			ids := []string{}
			for _, r := range page.Runs {
				ids = append(ids, r.TraceID)
			}
			return ids
		}
		for _, c := range []struct{ key, q, want string }{
			{"alpha-read", `{ }`, alpha.traceID},
			{"beta-read", `{ }`, beta.traceID},
			{"alpha-read", `{ resource.service.name = "svc-beta" }`, ""},
			{"alpha-read", `{ content contains "{\"n\":1}" }`, ""}, // beta's second tool call's arguments
			{"beta-read", `{ content contains "{\"n\":1}" }`, beta.traceID},
		} {
			got := names(c.key, c.q)
			if (c.want == "" && len(got) != 0) || (c.want != "" && (len(got) != 1 || got[0] != c.want)) {
				t.Errorf("%s: %s found %v, want [%s]", c.key, c.q, got, c.want)
			}
		}
		// Autocomplete offers the caller's project's values only.
		code, body := get(t, e, "/api/v1/search/values?since=24h&key=resource.service.name", e.keys["alpha-read"])
		if code != http.StatusOK || strings.Contains(string(body), "svc-beta") || !strings.Contains(string(body), "svc-alpha") {
			t.Errorf("alpha's service names: %d %s", code, body)
		}
		// Saved queries are the project's.
		if code, body := do(t, e, http.MethodPost, "/api/v1/search/saved", e.keys["alpha-read"], `{"name":"mine","query":"{ }"}`); code != http.StatusOK {
			t.Fatalf("alpha saving a query: %d %s", code, body)
		}
		if code, body := get(t, e, "/api/v1/search/saved", e.keys["beta-read"]); code != http.StatusOK || strings.Contains(string(body), "mine") {
			t.Errorf("beta's saved queries: %d %s", code, body)
		}
		if code, _ := do(t, e, http.MethodDelete, "/api/v1/search/saved/mine", e.keys["beta-read"], ""); code != http.StatusNotFound {
			t.Errorf("beta deleting alpha's saved query: %d, want 404", code)
		}
		if code, _ := get(t, e, "/api/v1/search?q=%7B%7D", e.keys["alpha-ingest"]); code != http.StatusForbidden {
			t.Errorf("an ingest key searching: %d, want 403", code)
		}
	})

	t.Run("costs are isolated", func(t *testing.T) {
		spans := func(key string) (int, uint64) {
			code, body := get(t, e, "/api/v1/costs?by=agent&since=24h", e.keys[key])
			var rep struct {
				Total struct {
					Spans uint64 `json:"spans"`
				} `json:"total"`
			}
			if code == http.StatusOK {
				if err := json.Unmarshal(body, &rep); err != nil {
					t.Fatalf("decode costs: %v\n%s", err, body)
				}
			}
			return code, rep.Total.Spans
		}
		codeB, b := spans("beta-read")
		if codeB == http.StatusNotFound || codeB == http.StatusNotImplemented {
			t.Skipf("GET /api/v1/costs not served by this build (%d)", codeB)
		}
		codeA, a := spans("alpha-read")
		// alpha: 1 agent + 1 chat + 1 tool = 3 spans; beta: 1 + 1 + 2 = 4.
		if codeA != http.StatusOK || codeB != http.StatusOK || a != 3 || b != 4 {
			t.Errorf("costs total spans: alpha %d (%d), beta %d (%d); want alpha 3, beta 4", a, codeA, b, codeB)
		}
	})

	t.Run("alerts are isolated", func(t *testing.T) {
		code, _ := get(t, e, "/api/v1/alerts", e.keys["beta-read"])
		if code == http.StatusNotFound || code == http.StatusNotImplemented {
			t.Skipf("GET /api/v1/alerts not served by this build (%d)", code)
		}
		code, body := get(t, e, "/api/v1/alerts", e.keys["alpha-read"])
		if code != http.StatusOK {
			t.Fatalf("alpha's alerts: %d %s", code, body)
		}
		for _, leak := range []string{beta.traceID, "svc-beta"} {
			if strings.Contains(string(body), leak) {
				t.Errorf("alpha's alerts mention beta's %s:\n%s", leak, body)
			}
		}
	})

	t.Run("static key", func(t *testing.T) {
		gamma, err := export(t, e, staticGammaKey, "svc-gamma", 0)
		if err != nil {
			t.Fatalf("gamma's static key: %v", err)
		}
		if got := runIDs(t, e, staticGammaKey); len(got) != 1 || got[0] != gamma.traceID {
			t.Errorf("gamma sees runs %v, want only [%s]", got, gamma.traceID)
		}
	})

	t.Run("revoked key refused", func(t *testing.T) {
		ctx := context.Background()
		ingest, ingestKey, err := e.store.Create(ctx, "alpha", []auth.Scope{auth.ScopeIngest}, "short-lived ingest")
		if err != nil {
			t.Fatal(err)
		}
		read, readKey, err := e.store.Create(ctx, "alpha", []auth.Scope{auth.ScopeRead}, "short-lived read")
		if err != nil {
			t.Fatal(err)
		}
		if err := e.keyring.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := export(t, e, ingestKey, "svc-alpha", 0); err != nil {
			t.Errorf("new ingest key after refresh: %v", err)
		}
		if code, _ := get(t, e, "/api/v1/runs", readKey); code != http.StatusOK {
			t.Errorf("new read key after refresh: %d, want 200", code)
		}
		for _, id := range []string{ingest.ID, read.ID} {
			if _, err := e.store.Revoke(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.keyring.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		_, err = export(t, e, ingestKey, "svc-alpha", 0)
		wantStatus(t, err, "401")
		if code, _ := get(t, e, "/api/v1/runs", readKey); code != http.StatusUnauthorized {
			t.Errorf("revoked read key: %d, want 401", code)
		}
		if _, err := e.store.Revoke(ctx, "key_000000000000"); !errors.Is(err, auth.ErrNoSuchKey) {
			t.Errorf("revoking an unknown id: %v, want ErrNoSuchKey", err)
		}
	})

	t.Run("session sign-in", func(t *testing.T) { testSession(t, e) })
}

// testSession signs in through /login with a browser-like client (cookie
// jar), reads through the session, signs out, and checks that revoking the
// key ends its session.
func testSession(t *testing.T, e *env) {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	browser := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(method, path string, form url.Values) (*http.Response, string) {
		t.Helper()
		var body io.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		}
		req, err := http.NewRequest(method, e.tally.URL+path, body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", e.tally.URL)
		}
		resp, err := browser.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, string(b)
	}

	// Not signed in: a UI page redirects to the sign-in page, the API says 401.
	resp, _ := do("GET", "/runs", nil)
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/login?next=%2Fruns" {
		t.Errorf("GET /runs signed out: %d to %q, want 302 to /login?next=%%2Fruns", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, _ := do("GET", "/api/v1/runs", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /api/v1/runs signed out: %d, want 401", resp.StatusCode)
	}
	if resp, body := do("GET", "/login?next=%2Fruns", nil); resp.StatusCode != http.StatusOK || !strings.Contains(body, `value="/runs"`) {
		t.Errorf("GET /login: %d\n%s", resp.StatusCode, body)
	}

	// An ingest key cannot sign in.
	if resp, _ := do("POST", "/login", url.Values{"key": {e.keys["beta-ingest"]}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("sign-in with an ingest key: %d, want 403", resp.StatusCode)
	}

	// Sign in with beta's read key.
	resp, _ = do("POST", "/login", url.Values{"key": {e.keys["beta-read"]}, "next": {"/runs"}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/runs" {
		t.Fatalf("sign-in: %d to %q, want 303 to /runs", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, body := do("GET", "/runs", nil); resp.StatusCode != http.StatusOK || body != "ui page" {
		t.Errorf("GET /runs signed in: %d %q, want 200 \"ui page\"", resp.StatusCode, body)
	}
	resp, body := do("GET", "/api/v1/runs?since=24h", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "svc-beta") || strings.Contains(body, "svc-alpha") {
		t.Errorf("GET /api/v1/runs signed in as beta: %d\n%s\nwant beta's run only", resp.StatusCode, body)
	}

	// Sign out: the cookie is gone, and with it access; the token itself is
	// revoked, here and, through ClickHouse, on every replica.
	u, err := url.Parse(e.tally.URL)
	if err != nil {
		t.Fatal(err)
	}
	var token string
	for _, c := range jar.Cookies(u) {
		if c.Name == auth.SessionCookie {
			token = c.Value
		}
	}
	if token == "" {
		t.Fatal("no session cookie after sign-in")
	}
	resp, _ = do("POST", "/logout", url.Values{})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login" {
		t.Errorf("sign-out: %d to %q, want 303 to /login", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, _ := do("GET", "/api/v1/runs", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /api/v1/runs after sign-out: %d, want 401", resp.StatusCode)
	}
	withToken := func() *http.Request {
		r, err := http.NewRequest(http.MethodGet, e.tally.URL+"/api/v1/runs", nil)
		if err != nil {
			t.Fatal(err)
		}
		r.AddCookie(&http.Cookie{Name: auth.SessionCookie, Value: token})
		return r
	}
	if resp, err := http.DefaultClient.Do(withToken()); err != nil {
		t.Fatal(err)
	} else if resp.Body.Close(); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the signed-out token replayed: %d, want 401", resp.StatusCode)
	}
	replica, err := auth.NewKeyring(context.Background(), auth.Config{Source: e.store, Revocations: e.store,
		Sessions: e.sessions})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := replica.AuthenticateRead(withToken()); !errors.Is(err, access.ErrUnauthenticated) {
		t.Errorf("the signed-out token on another replica: %v, want unauthenticated", err)
	}

	// Revoking the key a session was made from ends the session.
	ctx := context.Background()
	k, plaintext, err := e.store.Create(ctx, "beta", []auth.Scope{auth.ScopeRead}, "browser")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.keyring.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if resp, _ := do("POST", "/login", url.Values{"key": {plaintext}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in with a new key: %d, want 303", resp.StatusCode)
	}
	if resp, _ := do("GET", "/api/v1/runs", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("session of a new key: %d, want 200", resp.StatusCode)
	}
	if _, err := e.store.Revoke(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.keyring.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if resp, _ := do("GET", "/api/v1/runs", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("session of a revoked key: %d, want 401", resp.StatusCode)
	}
}

// TestMetricsNeedMetricsScope: /metrics spans every project (tool, agent and
// model names, costs), so with authentication on it is served only to a key
// with the metrics scope — not to anonymous callers, and not to a project's
// read key.
func TestMetricsNeedMetricsScope(t *testing.T) {
	e := start(t)
	for _, c := range []struct {
		name, key string
		want      int
	}{
		{"no key", "", http.StatusUnauthorized},
		{"unknown key", "tly_nope", http.StatusUnauthorized},
		{"read key", e.keys["alpha-read"], http.StatusForbidden},
		{"ingest key", e.keys["beta-ingest"], http.StatusForbidden},
		{"static read and ingest key", staticGammaKey, http.StatusForbidden},
		{"metrics key", e.keys["ops-metrics"], http.StatusOK},
	} {
		code, body := get(t, e, "/metrics", c.key)
		if code != c.want {
			t.Errorf("GET /metrics with %s: %d, want %d\n%.300s", c.name, code, c.want, body)
		}
		if answered := strings.Contains(string(body), "tally_receiver_"); answered != (c.want == http.StatusOK) {
			t.Errorf("GET /metrics with %s: answered metrics %v, want %v", c.name, answered, c.want == http.StatusOK)
		}
	}
	// A metrics key reads nothing else: not the API, and it cannot ingest.
	if code, _ := get(t, e, "/api/v1/runs", e.keys["ops-metrics"]); code != http.StatusForbidden {
		t.Errorf("GET /api/v1/runs with a metrics key: %d, want 403", code)
	}
	if _, err := export(t, e, e.keys["ops-metrics"], "svc-ops", 1); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("export with a metrics key: %v, want 403", err)
	}
}
