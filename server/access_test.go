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
			tally := tallytest.Start(t, func(o *server.Options) { o.Auth = c.auth })
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
