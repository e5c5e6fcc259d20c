package chdb_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/tallyhq/tally/internal/testenv"
	"github.com/tallyhq/tally/schema/chdb"
)

// serverSettingsEnv makes the test binary a helper that opens an engine of
// its own with MaxMemory set to the variable's value and prints the engine's
// memory and cache server settings (one data path per process: the tests'
// shared engine has none of these).
const serverSettingsEnv = "TALLY_CHDB_TEST_MAX_MEMORY"

// startupPagesEnv makes the test binary a helper that opens an engine of
// its own, logging as JSON to standard output, and runs a statement.
const startupPagesEnv = "TALLY_CHDB_TEST_STARTUP_PAGES"

func TestMain(m *testing.M) {
	if v := os.Getenv(serverSettingsEnv); v != "" {
		os.Exit(serverSettingsMain(v))
	}
	if os.Getenv(startupPagesEnv) != "" {
		os.Exit(startupPagesMain())
	}
	testenv.Main(m)
}

func serverSettingsMain(maxMemory string) int {
	n, err := strconv.ParseInt(maxMemory, 10, 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	dir, err := os.MkdirTemp("", "chdb-settings-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	e, err := chdb.Open(context.Background(), chdb.Config{Path: dir, MaxMemory: n,
		Settings: map[string]string{"index_mark_cache_size": "1000000"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer e.Close()
	r, err := e.Exec(context.Background(), chdb.Statement{SQL: []byte("SELECT name, value FROM system.server_settings WHERE name IN " +
		"('max_server_memory_usage', 'mark_cache_size', 'primary_index_cache_size', 'index_mark_cache_size', " +
		"'text_index_postings_cache_size', 'text_index_tokens_cache_size', 'text_index_header_cache_size', " +
		"'query_condition_cache_size', 'compiled_expression_cache_size', " +
		"'memory_worker_dynamic_hard_limit', 'memory_worker_purge_dirty_pages_threshold_ratio') ORDER BY name FORMAT TSV")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer r.Close()
	os.Stdout.Write(r.Bytes())
	return 0
}

func startupPagesMain() int {
	dir, err := os.MkdirTemp("", "chdb-pages-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	e, err := chdb.Open(context.Background(), chdb.Config{Path: dir, Logger: slog.New(slog.NewJSONHandler(os.Stdout, nil))})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer e.Close()
	r, err := e.Exec(context.Background(), chdb.Statement{SQL: []byte("SELECT sum(number) FROM numbers(1000) FORMAT TSV")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer r.Close()
	fmt.Printf("{\"sum\":%q}\n", strings.TrimSpace(string(r.Bytes())))
	return 0
}

// TestOpenGivesBackStartupPages: once open, the engine has given the
// kernel back most of its code pages that start-up touched (measured on
// this library: about 160 MiB resident before, about 45 after), and
// statements still run: their code faults back in.
//
// The helper loads a private copy of the library: the kernel pages out
// only pages no other process maps, and the suite runs other packages'
// engines beside this one (with them on the same file, 161 MiB before
// and 135–153 after).
func TestOpenGivesBackStartupPages(t *testing.T) {
	lib, err := chdb.FindLibrary("")
	if err != nil {
		t.Fatal(err)
	}
	private := filepath.Join(t.TempDir(), "libchdb.so")
	if err := copyFile(lib, private); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), startupPagesEnv+"=1", chdb.LibraryEnv+"="+private)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	var pages struct {
		Before *uint64 `json:"resident_mib_before"`
		After  *uint64 `json:"resident_mib_after"`
	}
	var sum string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var rec struct {
			Sum string `json:"sum"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Sum != "" {
			sum = rec.Sum
		}
		if strings.Contains(line, "start-up code pages") {
			if err := json.Unmarshal([]byte(line), &pages); err != nil {
				t.Fatal(err)
			}
		}
	}
	if sum != "499500" { // 0 + 1 + … + 999
		t.Errorf("the statement after the pages were given back: %q, want 499500\n%s", sum, out)
	}
	if pages.Before == nil || pages.After == nil {
		t.Fatalf("no report of the start-up pages:\n%s", out)
	}
	if *pages.Before < 50 || *pages.After > *pages.Before/2 {
		t.Fatalf("resident code pages %d MiB before, %d MiB after: want at least 50 before and half of it at most after", *pages.Before, *pages.After)
	}
}

// The engine's memory cap and cache sizes are what tally sets for a process
// it shares with the engine, and Settings override them.
func TestEngineMemoryAndCaches(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), serverSettingsEnv+"=300000000")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	want := "compiled_expression_cache_size\t33554432\n" + // 32 MiB
		"index_mark_cache_size\t1000000\n" + // overridden
		"mark_cache_size\t268435456\n" + // 256 MiB
		"max_server_memory_usage\t300000000\n" +
		"memory_worker_dynamic_hard_limit\t0\n" + // the cap holds
		"memory_worker_purge_dirty_pages_threshold_ratio\t0.1\n" +
		"primary_index_cache_size\t134217728\n" + // 128 MiB
		"query_condition_cache_size\t33554432\n" + // 32 MiB
		"text_index_header_cache_size\t16777216\n" + // 16 MiB
		"text_index_postings_cache_size\t67108864\n" + // 64 MiB
		"text_index_tokens_cache_size\t33554432\n" // 32 MiB
	if string(out) != want {
		t.Fatalf("server settings:\n%s\nwant:\n%s", out, want)
	}
}

// conn is clickhouse-go's HTTP client over the shared engine's transport,
// as package schema opens it.
func conn(t *testing.T) driver.Conn {
	t.Helper()
	engine := testenv.Embedded(t)
	c, err := clickhouse.Open(&clickhouse.Options{
		Protocol: clickhouse.HTTP,
		Addr:     []string{"embedded"},
		TransportFunc: func(*http.Transport) (http.RoundTripper, error) {
			return engine.Transport(), nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// database is a fresh database on the shared engine.
func database(t *testing.T, c driver.Conn) string {
	t.Helper()
	name := fmt.Sprintf("chdb_test_%d", time.Now().UnixNano())
	if err := c.Exec(context.Background(), "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Exec(context.Background(), "DROP DATABASE "+name+" SYNC") })
	return name
}

func TestServerInfoIsTheEngines(t *testing.T) {
	c := conn(t)
	v, err := c.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	// The pinned library is chDB 26.7.3, ClickHouse 26.7.2.1.
	if v.Version.Major != 26 || v.Version.Minor != 7 {
		t.Fatalf("server version %v, want 26.7", v.Version)
	}
	// The transport reports the revision the engine writes Native at.
	if v.Revision != 0 {
		t.Fatalf("revision %d, want 0", v.Revision)
	}
}

// spanRow has the column types tally's modern schema uses.
type spanRow struct {
	ID      uint64            `ch:"id"`
	Name    string            `ch:"name"`
	Kind    string            `ch:"kind"`
	Start   time.Time         `ch:"start"`
	Attrs   map[string]string `ch:"attrs"`
	Tags    []string          `ch:"tags"`
	Cost    float64           `ch:"cost"`
	Content string            `ch:"content"`
}

// Values that would break an INSERT sent as query text with its data
// appended: trailing whitespace and newlines at the very end of the block,
// NUL bytes, invalid UTF-8, quotes and backslashes.
func TestBatchRoundTripsEveryByte(t *testing.T) {
	ctx := context.Background()
	c := conn(t)
	db := database(t, c)
	table := db + ".spans"
	if err := c.Exec(ctx, `CREATE TABLE `+table+` (
		id UInt64, name String, kind LowCardinality(String), start DateTime64(9, 'UTC') CODEC(Delta, ZSTD(1)),
		attrs Map(String, String), tags Array(String), cost Float64, content String CODEC(ZSTD(3))
	) ENGINE = ReplacingMergeTree ORDER BY id TTL toDateTime(start) + INTERVAL 30 DAY`); err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 11, 30, 12, 0, 0, 123456789, time.UTC)
	want := []spanRow{
		{1, "chat", "llm", base, map[string]string{"gen_ai.system": "anthropic"}, []string{"a", "b"}, 0.007465, "hello\n"},
		{2, "tool 'x'", "tool", base.Add(time.Second), map[string]string{}, nil, 0, "nul\x00inside and \\ backslash"},
		{3, "bad utf8 \xff\xfe", "tool", base.Add(2 * time.Second), map[string]string{"k": " \t"}, []string{""}, 1e-9, strings.Repeat("x", 70000)},
		{4, "trailing", "llm", base.Add(3 * time.Second), map[string]string{"end": "\n"}, []string{"\n"}, 3.5, "ends in whitespace \n\t \n"},
	}
	batch, err := c.PrepareBatch(ctx, "INSERT INTO "+table+" (id, name, kind, start, attrs, tags, cost, content)")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range want {
		if err := batch.Append(r.ID, r.Name, r.Kind, r.Start, r.Attrs, r.Tags, r.Cost, r.Content); err != nil {
			t.Fatal(err)
		}
	}
	if err := batch.Send(); err != nil {
		t.Fatal(err)
	}
	var got []spanRow
	if err := c.Select(ctx, &got, "SELECT id, name, kind, start, attrs, tags, cost, content FROM "+table+" WHERE id >= ? ORDER BY id", uint64(1)); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d rows back, want %d", len(got), len(want))
	}
	for i := range want {
		w, g := want[i], got[i]
		if w.Tags == nil {
			w.Tags = []string{}
		}
		if g.ID != w.ID || g.Name != w.Name || g.Kind != w.Kind || !g.Start.Equal(w.Start) || g.Cost != w.Cost ||
			g.Content != w.Content || fmt.Sprint(g.Attrs) != fmt.Sprint(w.Attrs) || fmt.Sprint(g.Tags) != fmt.Sprint(w.Tags) {
			t.Errorf("row %d:\n got %#v\nwant %#v", i, g, w)
		}
	}
}

// failingReader gives its data, then err instead of io.EOF: a body whose
// sender went away midway.
type failingReader struct {
	data []byte
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// An INSERT's data is handed to the engine in pieces (chdb.InsertPiece): a
// Native block of several pieces arrives whole, one whose input fails
// midway writes nothing and fails as a read (not as a statement the engine
// refused), and an input that ends early is the engine's parse error. The
// rows' sum is worked out by hand: 0 + 1 + … + 99,999 = 99,999 × 100,000 / 2.
func TestInsertReadsItsDataInPieces(t *testing.T) {
	ctx := context.Background()
	engine := testenv.Embedded(t)
	c := conn(t)
	table := database(t, c) + ".numbers"
	if err := c.Exec(ctx, "CREATE TABLE "+table+" (n UInt64, s String) ENGINE = MergeTree ORDER BY n"); err != nil {
		t.Fatal(err)
	}
	r, err := engine.Exec(ctx, chdb.Statement{Format: "Native",
		SQL: []byte("SELECT number AS n, repeat(toString(number), 3) AS s FROM numbers(100000)")})
	if err != nil {
		t.Fatal(err)
	}
	block := append([]byte(nil), r.Bytes()...)
	r.Close()
	if len(block) < 4*chdb.InsertPiece {
		t.Fatalf("the block is %d bytes: the test needs one of at least four pieces (%d)", len(block), 4*chdb.InsertPiece)
	}
	count := func() (rows, sum uint64) {
		t.Helper()
		if err := c.QueryRow(ctx, "SELECT count(), sum(n) FROM "+table).Scan(&rows, &sum); err != nil {
			t.Fatal(err)
		}
		return rows, sum
	}
	insert := chdb.Statement{SQL: []byte("INSERT INTO " + table), InputFormat: "Native"}

	broken := errors.New("the sender went away")
	insert.Input = &failingReader{data: block[:len(block)/2], err: broken}
	_, err = engine.Exec(ctx, insert)
	if !errors.Is(err, broken) {
		t.Fatalf("an input failing midway: error %v, want the read's", err)
	}
	var ce *chdb.Error
	if errors.As(err, &ce) {
		t.Fatalf("an input failing midway reads as the engine's error: %v", err)
	}
	if rows, _ := count(); rows != 0 {
		t.Fatalf("%d rows written by an INSERT whose input failed, want none", rows)
	}

	insert.Input = strings.NewReader(string(block[:len(block)/2]))
	if _, err := engine.Exec(ctx, insert); !errors.As(err, &ce) {
		t.Fatalf("half a block: error %v, want the engine's parse error", err)
	}
	if rows, _ := count(); rows != 0 {
		t.Fatalf("%d rows written from half a block, want none", rows)
	}

	insert.Input = strings.NewReader(string(block))
	res, err := engine.Exec(ctx, insert)
	if err != nil {
		t.Fatal(err)
	}
	res.Close()
	if rows, sum := count(); rows != 100000 || sum != 99999*100000/2 {
		t.Fatalf("%d rows summing to %d, want 100000 summing to %d", rows, sum, 99999*100000/2)
	}
}

func TestErrorsAreClickHouseExceptions(t *testing.T) {
	c := conn(t)
	err := c.Exec(context.Background(), "SELECT * FROM no_such_database.no_such_table")
	var ex *clickhouse.Exception
	if !errors.As(err, &ex) {
		t.Fatalf("error %v (%T), want a *clickhouse.Exception", err, err)
	}
	// 81 is UNKNOWN_DATABASE.
	if ex.Code != 81 {
		t.Fatalf("exception code %d (%v), want 81", ex.Code, err)
	}
}

// Settings apply to their statement only: a connection that ran a statement
// with a setting runs the next one without it.
func TestSettingsApplyToOneStatement(t *testing.T) {
	ctx := context.Background()
	c := conn(t)
	get := func(ctx context.Context) string {
		t.Helper()
		var v string
		if err := c.QueryRow(ctx, "SELECT toString(getSetting('max_block_size'))").Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	def := get(ctx)
	// More statements than the engine has connections, alternating, so that
	// every connection runs both kinds after each other.
	for i := range 12 {
		want, sctx := def, ctx
		if i%2 == 0 {
			want = fmt.Sprint(1000 + i)
			sctx = clickhouse.Context(ctx, clickhouse.WithSettings(clickhouse.Settings{"max_block_size": 1000 + i}))
		}
		if got := get(sctx); got != want {
			t.Fatalf("statement %d: max_block_size %s, want %s", i, got, want)
		}
	}
}

func TestServerSideParameters(t *testing.T) {
	ctx := clickhouse.Context(context.Background(), clickhouse.WithParameters(clickhouse.Parameters{"n": "41", "s": "it's"}))
	var n uint64
	var s string
	if err := conn(t).QueryRow(ctx, "SELECT {n:UInt64} + 1, {s:String}").Scan(&n, &s); err != nil {
		t.Fatal(err)
	}
	if n != 42 || s != "it's" {
		t.Fatalf("got %d %q, want 42 \"it's\"", n, s)
	}
}

// Statements from many goroutines at once, more than the engine's
// connections: each gets its own answer.
func TestConcurrentStatements(t *testing.T) {
	c := conn(t)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var got uint64
			if err := c.QueryRow(context.Background(), "SELECT sum(number) FROM numbers(?)", uint64(i*1000)).Scan(&got); err != nil {
				errs <- err
				return
			}
			n := uint64(i * 1000)
			if want := n * (n - 1) / 2; n > 0 && got != want {
				errs <- fmt.Errorf("statement %d: sum %d, want %d", i, got, want)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// chDB installs crash handlers of its own; the engine gives Go's back, so a
// nil dereference is still a recoverable panic after the engine has run.
func TestGoPanicsStillRecoverAfterStatements(t *testing.T) {
	c := conn(t)
	if err := c.Exec(context.Background(), "SELECT count() FROM numbers(100000)"); err != nil {
		t.Fatal(err)
	}
	var p *int
	recovered := func() (r any) {
		defer func() { r = recover() }()
		_ = *p
		return nil
	}()
	if recovered == nil || !strings.Contains(fmt.Sprint(recovered), "nil pointer dereference") {
		t.Fatalf("recovered %v, want a nil pointer dereference panic", recovered)
	}
}

func TestRequestsTheTransportRefuses(t *testing.T) {
	tr := testenv.Embedded(t).Transport()
	for _, tc := range []struct {
		name   string
		url    string
		header http.Header
		want   string
	}{
		{"compressed body", "http://embedded/?default_format=Native", http.Header{"Content-Encoding": {"gzip"}}, "compressed request bodies"},
		{"native compression", "http://embedded/?compress=1", nil, "Native compression is not supported"},
		{"external tables", "http://embedded/", http.Header{"Content-Type": {"multipart/form-data; boundary=x"}}, "external tables"},
		{"other default database", "http://embedded/?database=other", nil, `database default (asked for "other")`},
		{"data without a format", "http://embedded/?query=INSERT+INTO+t+VALUES", nil, "must end in FORMAT"},
		{"readonly", "http://embedded/?readonly=1", nil, "readonly setting is not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, tc.url, strings.NewReader("SELECT 1"))
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.header {
				req.Header[k] = v
			}
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body := new(strings.Builder)
			if _, err := fmt.Fprint(body, readAll(t, resp)); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body.String(), tc.want) {
				t.Fatalf("status %d, body %q; want 400 and %q", resp.StatusCode, body, tc.want)
			}
		})
	}
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}

func TestWaitingForAConnectionHonoursTheContext(t *testing.T) {
	engine := testenv.Embedded(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := engine.Exec(ctx, chdb.Statement{SQL: []byte("SELECT 1")}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Exec with a cancelled context: %v, want context.Canceled", err)
	}
}

func TestFindLibrary(t *testing.T) {
	dir := t.TempDir()
	lib := filepath.Join(dir, chdb.LibraryName)
	if err := os.WriteFile(lib, []byte("not a library"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Run("explicit", func(t *testing.T) {
		t.Setenv(chdb.LibraryEnv, "/nonexistent/env/libchdb.so")
		if got, err := chdb.FindLibrary(lib); err != nil || got != lib {
			t.Fatalf("FindLibrary(%q) = %q, %v", lib, got, err)
		}
		if _, err := chdb.FindLibrary(filepath.Join(dir, "missing.so")); err == nil {
			t.Fatal("a missing explicit library is not an error")
		}
	})
	t.Run("environment", func(t *testing.T) {
		t.Setenv(chdb.LibraryEnv, lib)
		if got, err := chdb.FindLibrary(""); err != nil || got != lib {
			t.Fatalf("FindLibrary from $%s = %q, %v", chdb.LibraryEnv, got, err)
		}
		t.Setenv(chdb.LibraryEnv, filepath.Join(dir, "missing.so"))
		if _, err := chdb.FindLibrary(""); err == nil || !strings.Contains(err.Error(), chdb.LibraryEnv) {
			t.Fatalf("a missing $%s library: %v", chdb.LibraryEnv, err)
		}
	})
	t.Run(".tally/lib in a parent", func(t *testing.T) {
		t.Setenv(chdb.LibraryEnv, "")
		root := t.TempDir()
		want := filepath.Join(root, ".tally", "lib", chdb.LibraryName)
		if err := os.MkdirAll(filepath.Dir(want), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(want, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		sub := filepath.Join(root, "a", "b")
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Chdir(sub)
		if got, err := chdb.FindLibrary(""); err != nil || got != want {
			t.Fatalf("FindLibrary from %s = %q, %v; want %s", sub, got, err, want)
		}
	})
	t.Run("nowhere", func(t *testing.T) {
		t.Setenv(chdb.LibraryEnv, "")
		t.Chdir(t.TempDir())
		_, err := chdb.FindLibrary("")
		if !errors.Is(err, chdb.ErrLibraryNotFound) || !strings.Contains(err.Error(), "make deps") ||
			!strings.Contains(err.Error(), chdb.PinnedPackage) {
			t.Fatalf("no library anywhere: %v; want ErrLibraryNotFound saying how to get it", err)
		}
	})
	t.Run("not a library", func(t *testing.T) {
		_, err := chdb.Open(context.Background(), chdb.Config{Library: lib, Path: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), "load "+lib) {
			t.Fatalf("Open with a file that is not a library: %v", err)
		}
	})
}

// BenchmarkStatement is one small statement through clickhouse-go and the
// transport: the per-statement cost of the embedded store. With a deadline
// clickhouse-go adds max_execution_time, which costs the connection a SET
// when it differs from the last statement's.
func BenchmarkStatement(b *testing.B) {
	engine := testenv.Embedded(b)
	c, err := clickhouse.Open(&clickhouse.Options{Protocol: clickhouse.HTTP, Addr: []string{"embedded"},
		TransportFunc: func(*http.Transport) (http.RoundTripper, error) { return engine.Transport(), nil }})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	for _, bc := range []struct {
		name     string
		deadline bool
	}{{"no deadline", false}, {"deadline", true}} {
		b.Run(bc.name, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				ctx, cancel := context.Background(), context.CancelFunc(func() {})
				if bc.deadline {
					ctx, cancel = context.WithTimeout(ctx, time.Duration(10+i%50)*time.Second)
				}
				var n uint64
				err := c.QueryRow(ctx, "SELECT count() FROM system.one").Scan(&n)
				cancel() // now, not at the end: b.N live timers would skew the figure
				if err != nil || n != 1 {
					b.Fatal(n, err)
				}
			}
		})
	}
}

// A path belongs to one Engine at a time: a second Open of the shared
// engine's path is refused before it touches the engine.
func TestSecondOpenOfAPathIsRefused(t *testing.T) {
	engine := testenv.Embedded(t)
	_, err := chdb.Open(context.Background(), chdb.Config{Path: engine.Path()})
	if err == nil || !strings.Contains(err.Error(), "already open in this process") {
		t.Fatalf("second Open of %s: %v, want it refused as already open in this process", engine.Path(), err)
	}
	var n uint64
	if err := conn(t).QueryRow(context.Background(), "SELECT count() FROM system.one").Scan(&n); err != nil || n != 1 {
		t.Fatalf("the shared engine after the refused Open: %d, %v", n, err)
	}
}

// copyFile copies the file src to dst (a new file).
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return out.Close()
}
