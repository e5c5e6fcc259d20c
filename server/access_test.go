package server_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tallyhq/tally/internal/tallytest"
	"github.com/tallyhq/tally/server"
)

// readOnlyAuth authenticates every caller as project "p" and does not
// implement server.MetricsAuthenticator.
type readOnlyAuth struct{}

func (readOnlyAuth) AuthenticateIngest(*http.Request) (string, error) { return "p", nil }
func (readOnlyAuth) AuthenticateRead(*http.Request) (string, error)   { return "p", nil }

// offAuth is an authenticator that is switched off (no key configured).
type offAuth struct{ readOnlyAuth }

func (offAuth) Enabled() bool { return false }

// metricsAuth lets a scrape through only with "Authorization: Bearer scrape".
type metricsAuth struct{ readOnlyAuth }

func (metricsAuth) AuthenticateMetrics(r *http.Request) error {
	if r.Header.Get("Authorization") != "Bearer scrape" {
		return errors.New("no metrics key")
	}
	return nil
}

// fetch GETs url with headers and returns the status and body.
func fetch(t *testing.T, url string, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// TestMetricsAccess: /metrics is open without an authenticator (a loopback
// development server), refused by an authenticator that cannot judge a
// scrape, and otherwise up to the authenticator.
func TestMetricsAccess(t *testing.T) {
	for _, c := range []struct {
		name   string
		auth   server.Authenticator
		header map[string]string
		want   int
	}{
		{"authentication off", nil, nil, http.StatusOK},
		{"authenticator without a metrics scope", readOnlyAuth{}, map[string]string{"Authorization": "Bearer scrape"}, http.StatusForbidden},
		{"metrics key", metricsAuth{}, map[string]string{"Authorization": "Bearer scrape"}, http.StatusOK},
		{"authenticator error", metricsAuth{}, nil, http.StatusServiceUnavailable},
	} {
		t.Run(c.name, func(t *testing.T) {
			tally := tallytest.Start(t, func(o *tallytest.Config) { o.Server.Auth = c.auth })
			code, body := fetch(t, tally.URL+"/metrics", c.header)
			if code != c.want {
				t.Errorf("GET /metrics: %d, want %d\n%.300s", code, c.want, body)
			}
			if served := strings.Contains(body, "tally_receiver_"); served != (c.want == http.StatusOK) {
				t.Errorf("GET /metrics served metrics: %v, want %v", served, c.want == http.StatusOK)
			}
		})
	}
}

// TestHostCheckWithoutAuthentication: with authentication off only loopback
// Host headers are served (and those configured), so that a web page whose
// DNS name is rebound to 127.0.0.1 cannot read a development server through
// the visitor's browser. With authentication on the key protects, not the
// Host header.
func TestHostCheckWithoutAuthentication(t *testing.T) {
	off := tallytest.Start(t)
	on := tallytest.Start(t, func(o *tallytest.Config) { o.Server.Auth = readOnlyAuth{} })
	switchedOff := tallytest.Start(t, func(o *tallytest.Config) { o.Server.Auth = offAuth{} })
	allow := tallytest.Start(t, func(o *tallytest.Config) { o.Server.AllowedHosts = []string{"tally.lan", "[fd00::1]"} })
	anyHost := tallytest.Start(t, func(o *tallytest.Config) { o.Server.AllowedHosts = []string{"*"} })
	for _, c := range []struct {
		name string
		url  string
		host string
		want int
	}{
		{"localhost", off.URL, "localhost:4318", http.StatusOK},
		{"localhost without port", off.URL, "localhost", http.StatusOK},
		{"upper case localhost", off.URL, "LOCALHOST:80", http.StatusOK},
		{"127.0.0.1", off.URL, "127.0.0.1:4318", http.StatusOK},
		{"IPv6 loopback", off.URL, "[::1]:4318", http.StatusOK},
		{"IPv6 loopback without port", off.URL, "[::1]", http.StatusOK},
		{"rebound name", off.URL, "attacker.example:4318", http.StatusForbidden},
		{"rebound name without port", off.URL, "attacker.example", http.StatusForbidden},
		{"localhost as a subdomain", off.URL, "localhost.attacker.example", http.StatusForbidden},
		{"other address", off.URL, "192.0.2.1:4318", http.StatusForbidden},
		{"authentication on", on.URL, "attacker.example", http.StatusOK},
		{"authenticator switched off", switchedOff.URL, "attacker.example", http.StatusForbidden},
		{"authenticator switched off, localhost", switchedOff.URL, "localhost", http.StatusOK},
		{"allowed name", allow.URL, "tally.lan:4318", http.StatusOK},
		{"allowed name, other case", allow.URL, "Tally.LAN", http.StatusOK},
		{"allowed IPv6 address", allow.URL, "[fd00::1]:4318", http.StatusOK},
		{"loopback beside allowed names", allow.URL, "localhost:4318", http.StatusOK},
		{"name not allowed", allow.URL, "attacker.example", http.StatusForbidden},
		{"any host", anyHost.URL, "attacker.example", http.StatusOK},
	} {
		for _, path := range []string{"/api/v1/runs", "/", "/metrics"} {
			code, body := fetch(t, c.url+path, map[string]string{"Host": c.host})
			if path == "/metrics" && (c.url == on.URL || c.url == switchedOff.URL) {
				continue // refused by readOnlyAuth whatever the host
			}
			if code != c.want {
				t.Errorf("%s: GET %s with Host %s: %d, want %d\n%.300s", c.name, path, c.host, code, c.want, body)
			}
		}
	}
}

// TestHealthIgnoresHost: probes reach /healthz and /readyz by address
// whatever the mode, and they hold no project data.
func TestHealthIgnoresHost(t *testing.T) {
	tally := tallytest.Start(t)
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := fetch(t, tally.URL+path, map[string]string{"Host": "10.1.2.3:4318"}); code != http.StatusOK {
			t.Errorf("GET %s with Host 10.1.2.3: %d, want 200\n%s", path, code, body)
		}
	}
}
