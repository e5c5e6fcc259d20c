package ui

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tallyhq/tally/query"
)

// fakeRuns knows one run of project "p1".
type fakeRuns struct{ fail bool }

const knownRun = "0123456789abcdef0123456789abcdef"

func (f fakeRuns) RunExists(_ context.Context, project, traceID string) (bool, error) {
	if f.fail {
		return false, errors.New("clickhouse down")
	}
	return project == "p1" && traceID == knownRun, nil
}

// twinRun shares knownRun's first 16 characters: a prefix of 16 or fewer
// is ambiguous.
const twinRun = "0123456789abcdef0000000000000000"

func (f fakeRuns) TraceIDsWithPrefix(_ context.Context, project, prefix string, limit int) ([]string, error) {
	if f.fail {
		return nil, errors.New("clickhouse down")
	}
	var out []string
	for _, id := range []string{twinRun, knownRun} {
		if project == "p1" && strings.HasPrefix(id, prefix) && len(out) < limit {
			out = append(out, id)
		}
	}
	return out, nil
}

func projectP1(*http.Request) string { return "p1" }

func TestPageStatusCodes(t *testing.T) {
	h := Handler(WithRuns(fakeRuns{}, projectP1))
	cases := []struct {
		method, path string
		want         int
		contains     string // in the body
	}{
		{"GET", "/", 200, `data-page="runs"`},
		{"GET", "/runs", 200, `data-page="runs"`},
		{"GET", "/runs?since=24h&agent=planner&status=error&min_cost=0.5&q=x&sort=cost&dir=asc", 200, `value="planner"`},
		{"GET", "/runs?since=2025-01-01T00:00:00Z&until=2025-01-02T00:00:00Z", 200, `data-page="runs"`},
		{"GET", "/runs?since=yesterday", 400, "since"},
		{"GET", "/runs?since=2025-01-02T00:00:00Z&until=2025-01-01T00:00:00Z", 400, "before"},
		{"GET", "/runs?status=broken", 400, "status"},
		{"GET", "/runs?min_cost=-1", 400, "min_cost"},
		{"GET", "/runs?min_cost=abc", 400, "min_cost"},
		{"GET", "/runs?limit=0", 400, "limit"},
		{"GET", "/runs?sort=nope", 400, "sort"},
		{"GET", "/runs?dir=up", 400, "dir"},
		{"GET", "/runs/" + knownRun, 200, `data-id="` + knownRun + `"`},
		{"GET", "/runs/" + strings.ToUpper(knownRun), 200, `data-page="run"`},
		{"GET", "/runs/ffffffffffffffffffffffffffffffff", 404, "No run with trace id"},
		{"GET", "/runs/not-a-trace", 400, "not a trace id"},
		// Short ids: a unique prefix redirects to the run, an ambiguous one
		// lists the matches, an unknown one is a 404, under 8 is refused.
		{"GET", "/runs/" + knownRun[:20], 302, "/runs/" + knownRun},
		{"GET", "/runs/" + knownRun[:8], 400, twinRun + ", " + knownRun},
		{"GET", "/runs/fedcba98", 404, "No trace id in this project starts with fedcba98"},
		{"GET", "/runs/0123456", 400, "the first 8 or more"},
		{"GET", "/conversations", 200, `data-page="conversations"`},
		{"GET", "/conversations?since=x", 400, "since"},
		{"GET", "/conversations/conv-1", 200, `data-page="conversation"`},
		{"GET", "/conversations/conv%201", 200, "conv 1"},
		{"GET", "/costs", 200, `data-page="costs"`},
		{"GET", "/costs?since=7d&bucket=day", 200, `data-page="costs"`},
		{"GET", "/costs?bucket=week", 400, "bucket"},
		{"GET", "/costs?until=soon", 400, "until"},
		{"GET", "/tools", 200, `data-page="tools"`},
		{"GET", "/tools?since=1h", 200, `data-page="tools"`},
		{"GET", "/tools?since=x", 400, "since"},
		{"GET", "/cache", 200, `data-page="cache"`},
		{"GET", "/tasks", 200, `data-page="tasks"`},
		{"GET", "/cache?since=-3h", 400, "since"},
		{"GET", "/alerts", 200, `data-page="alerts"`},
		{"GET", "/alerts?state=firing", 200, `data-page="alerts"`},
		{"GET", "/alerts?state=sleeping", 400, "state"},
		{"GET", "/nowhere", 404, "There is no page"},
		{"GET", "/runs/" + knownRun + "/extra", 404, "There is no page"},
		{"POST", "/runs", 405, "only answers GET"},
		{"HEAD", "/runs", 200, ""},
		{"GET", "/api/v1/costs", 404, `"error":"not available in this build`},
		{"GET", "/static/app.js", 200, "pageRun"},
		{"GET", "/static/style.css", 200, ".wf-row"},
		{"GET", "/static/missing.js", 404, ""},
	}
	for _, c := range cases {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, nil))
			body, _ := io.ReadAll(rec.Body)
			if rec.Code != c.want {
				t.Fatalf("status %d, want %d; body:\n%.400s", rec.Code, c.want, body)
			}
			if !strings.Contains(string(body), c.contains) {
				t.Errorf("body does not contain %q:\n%.600s", c.contains, body)
			}
		})
	}
}

func TestRunLookupFailureIs503(t *testing.T) {
	h := Handler(WithRuns(fakeRuns{fail: true}, projectP1))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/runs/"+knownRun, nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503", rec.Code)
	}
}

func TestRunPageWithoutLookupServesAnyWellFormedID(t *testing.T) {
	h := Handler()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/runs/ffffffffffffffffffffffffffffffff", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d, want 200", rec.Code)
	}
}

// The pages are usable offline: nothing refers to another host.
func TestNoExternalReferences(t *testing.T) {
	h := Handler(WithRuns(fakeRuns{}, projectP1))
	paths := []string{"/runs", "/runs/" + knownRun, "/costs", "/tools", "/cache", "/tasks", "/alerts", "/static/style.css"}
	modules, _ := fs.Glob(staticFS, "static/*/*.js")
	paths = append(append(paths, "/static/app.js"), func() (out []string) {
		for _, m := range modules {
			out = append(out, "/"+m)
		}
		return out
	}()...)
	for _, path := range paths {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != http.StatusOK {
			t.Errorf("%s: status %d, want 200 (an error page would pass the check below vacuously)", path, rec.Code)
		}
		body := rec.Body.String()
		for _, bad := range []string{"https://", "http://cdn", "//fonts.", "@import"} {
			if strings.Contains(body, bad) {
				t.Errorf("%s refers to %q", path, bad)
			}
		}
	}
}

// Static assets referenced with the current version are cached for good;
// the HTML shells are never cached.
func TestCacheHeaders(t *testing.T) {
	h := Handler().(*handler)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/static/app.js?v="+h.version, nil))
	if got := rec.Header().Get("Cache-Control"); !strings.Contains(got, "immutable") {
		t.Errorf("versioned asset Cache-Control %q", got)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.Contains(ct, "javascript") {
		t.Errorf("app.js Content-Type %q", ct)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/runs", nil))
	if got := rec.Header().Get("Cache-Control"); got != "no-store" {
		t.Errorf("page Cache-Control %q", got)
	}
}

// TestStaticNeverListsDirectories: the static file server answers files
// only; a directory is a 404 and its contents are not listed.
func TestStaticNeverListsDirectories(t *testing.T) {
	h := Handler()
	for _, path := range []string{"/static/", "/static//", "/static/./", "/static/?v=1"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		body := rec.Body.String()
		if rec.Code != http.StatusNotFound || strings.Contains(body, "app.js") {
			t.Errorf("GET %s: %d, want 404 without a listing:\n%.300s", path, rec.Code, body)
		}
	}
}

// TestModulesRevalidate: a module app.js imports (fetched without ?v) is
// served with the assets' version as ETag, and a request that has it gets
// 304 instead of the file again.
func TestModulesRevalidate(t *testing.T) {
	h := Handler().(*handler)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/static/lib/html.js", nil))
	etag := rec.Header().Get("ETag")
	if rec.Code != http.StatusOK || etag != `"`+h.version+`"` || !strings.Contains(rec.Header().Get("Content-Type"), "javascript") {
		t.Fatalf("module: %d, ETag %q, Content-Type %q", rec.Code, etag, rec.Header().Get("Content-Type"))
	}
	req := httptest.NewRequest("GET", "/static/lib/html.js", nil)
	req.Header.Set("If-None-Match", etag)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusNotModified {
		t.Errorf("revalidation: %d, want 304", rec.Code)
	}
}

// TestModulesEscapeByDefault holds the UI's modules to their rule: only
// lib/html.js writes markup into the page (innerHTML, insertAdjacentHTML,
// outerHTML, document.write), everything else goes through its html`…`
// values; and every module a module imports is embedded (a typo in an
// import path would break the page only in a browser).
func TestModulesEscapeByDefault(t *testing.T) {
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		t.Fatal(err)
	}
	importRE := regexp.MustCompile(`(?m)^import .* from '([^']+)';$`)
	modules := 0
	err = fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".js") {
			return err
		}
		modules++
		b, err := fs.ReadFile(sub, p)
		if err != nil {
			return err
		}
		src := string(b)
		for _, sink := range []string{".innerHTML", "insertAdjacentHTML", ".outerHTML", "document.write"} {
			if strings.Contains(src, sink) && p != "lib/html.js" {
				t.Errorf("%s writes markup with %s: use show/append of lib/html.js", p, sink)
			}
		}
		for _, m := range importRE.FindAllStringSubmatch(src, -1) {
			target := path.Join(path.Dir(p), m[1])
			if _, err := fs.Stat(sub, target); err != nil {
				t.Errorf("%s imports %s: %v", p, m[1], err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if modules < 10 {
		t.Errorf("%d modules embedded, want the split UI (app.js, lib/, pages/)", modules)
	}
}

// TestRunsPageSortsByEveryOption is issue #36's defect: the runs page
// offered Sort: tokens and retries and answered 400 for both, because the
// UI kept a list of sort keys of its own. Every option the page renders is
// now taken, and the UI's list is the API's (query.RunSorts).
func TestRunsPageSortsByEveryOption(t *testing.T) {
	h := Handler(WithRuns(fakeRuns{}, projectP1))
	get := func(path string) (int, string) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		return w.Code, w.Body.String()
	}
	code, page := get("/runs")
	if code != http.StatusOK {
		t.Fatalf("/runs: %d", code)
	}
	sel := page[strings.Index(page, `<select name="sort">`):]
	sel = sel[:strings.Index(sel, "</select>")]
	var offered []string
	for _, m := range regexp.MustCompile(`<option value="([^"]*)"`).FindAllStringSubmatch(sel, -1) {
		offered = append(offered, m[1])
	}
	if len(offered) < 6 {
		t.Fatalf("the sort select offers %v", offered)
	}
	for _, s := range offered {
		if code, body := get("/runs?sort=" + s + "&dir=asc"); code != http.StatusOK {
			t.Errorf("sort %q offered, answered %d: %.200s", s, code, body)
		}
	}
	var sorts []string
	for _, o := range query.RunSortOptions() {
		if o.Sort == query.SortStart {
			sorts = append(sorts, "") // the default order: no parameter
			continue
		}
		sorts = append(sorts, string(o.Sort))
	}
	if !slices.Equal(offered, sorts) {
		t.Errorf("the page offers the orders %v, the API sorts by %v", offered, sorts)
	}
}
