package api_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/tallyhq/tally/internal/replaytest"
	"github.com/tallyhq/tally/internal/tallytest"
	"github.com/tallyhq/tally/replay"
)

// get fetches url with an optional bearer token and returns status, headers
// and body.
func get(t *testing.T, url, token string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
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
	return resp.StatusCode, resp.Header, body
}

// TestFixtureEndpoint sends the trip run through the OTel SDK exporter, once
// with content capture on and once off, and checks that each exports to the
// hand-written fixture in testdata, byte for byte, every time.
//
// The expected files were written from replaytest.SendTrip's doc: calls in
// start order (search 1020 ms, get_weather 1300 ms and 1900 ms, book 2100 ms),
// durations 1270−1020 = 250, 1800−1300 = 500, 2020−1900 = 120, 2350.5−2100 =
// 250.5 ms; arguments and results with sorted keys; args_hash the SHA-256 of
// the canonical arguments, computed with sha256sum:
//
//	printf '%s' '{"limit":10,"q":"hotels in Lisbon"}' | sha256sum  → 41694c00…9d19
//	printf '%s' '{"city":"Lisbon"}' | sha256sum                   → 0ee04e56…ff1e (both get_weather calls: whitespace does not count)
//	printf '%s' '{"hotel_id":"h1","nights":3}' | sha256sum        → 835939d9…b13b
//
// The book call came as OpenInference input.value/output.value; its plain
// text output is result_text. The failed get_weather call is not missing a
// result. With capture off every call misses its arguments, and every call
// but the failed one (#2) its result.
func TestFixtureEndpoint(t *testing.T) {
	tally := tallytest.Start(t)
	for _, c := range []struct {
		capture bool
		want    string
	}{
		{true, "testdata/trip_fixture.json"},
		{false, "testdata/trip_uncaptured_fixture.json"},
	} {
		id := replaytest.SendTrip(t, tally.URL, c.capture, nil)
		want, err := os.ReadFile(c.want)
		if err != nil {
			t.Fatal(err)
		}
		url := tally.URL + "/api/v1/runs/" + id + "/fixture"
		code, header, first := get(t, url, "")
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", url, code, first)
		}
		if ct := header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type %q, want application/json", ct)
		}
		wantCD := `attachment; filename="` + id + `.fixture.json"`
		if cd := header.Get("Content-Disposition"); cd != wantCD {
			t.Errorf("Content-Disposition %q, want %q", cd, wantCD)
		}
		if !bytes.Equal(first, want) {
			t.Errorf("fixture of %s differs from %s:\n%s", id, c.want, first)
		}
		// Upper-case ids name the same run; the export is byte-identical.
		_, _, second := get(t, tally.URL+"/api/v1/runs/"+strings.ToUpper(id)+"/fixture", "")
		if !bytes.Equal(first, second) {
			t.Errorf("second export of %s differs:\n%s\nfirst:\n%s", id, second, first)
		}
		if _, err := replay.Parse(first); err != nil {
			t.Errorf("exported fixture does not parse: %v", err)
		}
	}
}

// TestFixtureEndpointWithInferences adds the run's one chat call: gpt-4o,
// 1200 input and 80 output tokens, 10–1010 ms.
func TestFixtureEndpointWithInferences(t *testing.T) {
	tally := tallytest.Start(t)
	id := replaytest.SendTrip(t, tally.URL, true, nil)
	code, _, body := get(t, tally.URL+"/api/v1/runs/"+id+"/fixture?inferences=true", "")
	if code != http.StatusOK {
		t.Fatalf("GET: %d %s", code, body)
	}
	f, err := replay.Parse(body)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Calls) != 4 || len(f.Inferences) != 1 {
		t.Fatalf("%d calls, %d inferences; want 4 and 1", len(f.Calls), len(f.Inferences))
	}
	in := f.Inferences[0]
	want := replay.Usage{InputTokens: 1200, OutputTokens: 80}
	if in.Model != "gpt-4o" || in.Provider != "openai" || in.Usage != want || in.DurationMs != 1000 ||
		in.SpanID != "0000000000000002" {
		t.Errorf("inference %+v", in)
	}
}

func TestFixtureEndpointErrors(t *testing.T) {
	tally := tallytest.Start(t)
	id := replaytest.SendTrip(t, tally.URL, true, nil)
	for _, c := range []struct {
		name string
		path string
		want int
	}{
		{"unknown run", "/api/v1/runs/" + strings.Repeat("ab", 16) + "/fixture", http.StatusNotFound},
		{"not a trace id", "/api/v1/runs/xyz/fixture", http.StatusBadRequest},
		{"bad inferences flag", "/api/v1/runs/" + id + "/fixture?inferences=maybe", http.StatusBadRequest},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, header, body := get(t, tally.URL+c.path, "")
			if code != c.want || !strings.Contains(string(body), `"error"`) {
				t.Errorf("GET %s: %d %s, want %d with an error", c.path, code, body, c.want)
			}
			if cd := header.Get("Content-Disposition"); cd != "" {
				t.Errorf("error answer is a download: %q", cd)
			}
		})
	}
}

// tokenProjects authenticates "Bearer <project>" as that project, for both
// ingest and reads.
type tokenProjects struct{}

func (tokenProjects) AuthenticateIngest(r *http.Request) (string, error) { return tokenProject(r) }
func (tokenProjects) AuthenticateRead(r *http.Request) (string, error)   { return tokenProject(r) }

func tokenProject(r *http.Request) (string, error) {
	p, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || p == "" {
		return "", errors.New("no token")
	}
	return p, nil
}

// TestFixtureEndpointIsolatesProjects: a run of project alpha is not
// exported to project beta.
func TestFixtureEndpointIsolatesProjects(t *testing.T) {
	tally := tallytest.Start(t, func(o *tallytest.Config) { o.Server.Auth = tokenProjects{} })
	id := replaytest.SendTrip(t, tally.URL, true, map[string]string{"Authorization": "Bearer alpha"})
	url := tally.URL + "/api/v1/runs/" + id + "/fixture"
	if code, _, body := get(t, url, "alpha"); code != http.StatusOK {
		t.Fatalf("alpha: %d %s", code, body)
	}
	if code, _, body := get(t, url, "beta"); code != http.StatusNotFound {
		t.Errorf("beta: %d %s, want 404", code, body)
	}
}
