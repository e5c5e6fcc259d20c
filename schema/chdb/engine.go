// Package chdb runs the ClickHouse engine in-process: chDB's shared library,
// loaded at run time with purego (no cgo), behind the ClickHouse HTTP
// interface as an http.RoundTripper (transport.go). clickhouse-go's own HTTP
// client talks to it, so package schema and everything above it issue the
// same SQL, bind arguments and encode and decode Native blocks with
// clickhouse-go's own column types, whichever store they run on.
//
// chDB keeps one storage path per process, and the path belongs to one
// process at a time (a second Open of a path already open, in this process
// or another, fails): open one Engine per process, and another only after
// closing it.
package chdb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"unsafe"
)

// Config says where the engine keeps its data and how many statements it
// runs at once.
type Config struct {
	// Library is the path of libchdb.so; "" finds it (FindLibrary).
	Library string
	// Path is the data directory (created if missing).
	Path string
	// Conns is how many chDB connections, so statements at once: 4 if 0.
	// A connection runs one statement at a time.
	Conns int
	// Settings are query-level settings for every connection (max_threads,
	// max_memory_usage, ...), as if each had run SET name = value. Server
	// settings (mark_cache_size, ...) go here too: the first connection
	// boots the engine with them.
	Settings map[string]string
	// MaxMemory caps the engine's memory (max_server_memory_usage) in
	// bytes: a statement that would pass it fails instead of growing the
	// process. 0 leaves the engine's default, 90% of the machine's memory.
	MaxMemory int64
	// Logger reports which signal handlers chDB took and were given back.
	Logger *slog.Logger
}

// Engine is an open chDB engine: a pool of connections to one data path.
type Engine struct {
	lib     *library
	path    string
	signals signalState
	logger  *slog.Logger

	pool chan *conn
	all  []*conn

	// pieces are the buffers INSERTs read their data into (InsertPiece
	// bytes each), reused across statements.
	pieces sync.Pool

	mu     sync.Mutex
	closed bool
	busy   sync.WaitGroup // statements running, for Close
}

// conn is one chDB connection and the session state tally set on it.
type conn struct {
	handle unsafe.Pointer // chdb_connection * (what chdb_connect returned)
	// base is the settings the connection was opened with; settings is
	// what its session has now (base with the last statement's on top).
	base, settings map[string]string
}

// value is the chdb_connection the query functions take.
func (c *conn) value() unsafe.Pointer { return *(*unsafe.Pointer)(c.handle) }

// embeddedServerSettings fit the engine to a process it shares with tally
// (the server defaults assume a machine of its own); Config.Settings
// overrides them:
//
//   - the caches' sizes (5 GiB each by default; the text index's 1–2 GiB,
//     the query condition cache's 100 MiB and the compiled expressions'
//     128 MiB): a cache counts toward the engine's cap and gives memory
//     back only past its own size, so a cache larger than the cap leaves
//     the statements too little (searches of content fill the text
//     index's);
//   - memory_worker_dynamic_hard_limit off: the engine would otherwise
//     raise its memory cap at run time to 90% of what the machine has
//     free, so MaxMemory would not hold (measured: 163 MiB tracked under
//     a 102 MiB cap);
//   - memory_worker_purge_dirty_pages_threshold_ratio 0.1 (default 0.2):
//     the allocator's freed pages are given back once they pass a tenth
//     of the cap, not kept for reuse; under the bench's ingest the peak
//     RSS fell by 40–120 MiB with no loss of rate measured.
var embeddedServerSettings = map[string]string{
	"mark_cache_size":                                 fmt.Sprint(256 << 20),
	"primary_index_cache_size":                        fmt.Sprint(128 << 20),
	"index_mark_cache_size":                           fmt.Sprint(64 << 20),
	"text_index_postings_cache_size":                  fmt.Sprint(64 << 20),
	"text_index_tokens_cache_size":                    fmt.Sprint(32 << 20),
	"text_index_header_cache_size":                    fmt.Sprint(16 << 20),
	"query_condition_cache_size":                      fmt.Sprint(32 << 20),
	"compiled_expression_cache_size":                  fmt.Sprint(32 << 20),
	"memory_worker_dynamic_hard_limit":                "0",
	"memory_worker_purge_dirty_pages_threshold_ratio": "0.1",
}

var settingNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Open loads the library, keeps the Go runtime's signal handlers from chDB,
// and opens cfg.Conns connections on cfg.Path.
func Open(ctx context.Context, cfg Config) (*Engine, error) {
	if runtime.GOOS != "linux" || (runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64") {
		return nil, fmt.Errorf("chdb: the embedded store runs on Linux amd64 or arm64 (this is %s/%s); use --store clickhouse", runtime.GOOS, runtime.GOARCH)
	}
	if cfg.Path == "" {
		return nil, errors.New("chdb: a data path is required")
	}
	if cfg.Conns <= 0 {
		cfg.Conns = 4
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	for name := range cfg.Settings {
		if !settingNameRE.MatchString(name) {
			return nil, fmt.Errorf("chdb: setting name %q: must match %s", name, settingNameRE)
		}
	}
	libPath, err := FindLibrary(cfg.Library)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Path, 0o755); err != nil {
		return nil, fmt.Errorf("chdb: create data path: %w", err)
	}
	if err := checkPathFree(cfg.Path); err != nil {
		return nil, err
	}
	// Go's dispositions, read before the library's own start-up code runs.
	// Until Open returns, the fault signals may be chDB's or the default for
	// a moment: open the engine before starting other work.
	signals, err := saveSignals()
	if err != nil {
		return nil, fmt.Errorf("chdb: read signal handlers: %w", err)
	}
	lib, err := loadLibrary(libPath)
	if err != nil {
		return nil, err
	}
	e := &Engine{lib: lib, path: cfg.Path, logger: cfg.Logger, pool: make(chan *conn, cfg.Conns), signals: signals}
	e.pieces.New = func() any { b := make([]byte, InsertPiece); return &b }
	e.restoreSignals("load the library")
	// Opting out of chDB's crash handlers resets the fault signals to
	// SIG_DFL as a side effect: give Go's back at once.
	lib.setSignalHandlers(0)
	e.restoreSignals("disable chDB's handlers")

	args := []string{"tally", "--path=" + cfg.Path}
	settings := maps.Clone(embeddedServerSettings)
	if cfg.MaxMemory > 0 {
		settings["max_server_memory_usage"] = fmt.Sprint(cfg.MaxMemory)
	}
	maps.Copy(settings, cfg.Settings)
	for _, name := range slices.Sorted(maps.Keys(settings)) {
		args = append(args, "--"+name+"="+settings[name])
	}
	// Query settings given at connect are each connection's own baseline:
	// a statement's settings are set over them and put back after.
	base := maps.Clone(cfg.Settings)
	for range cfg.Conns {
		if err := ctx.Err(); err != nil {
			e.Close()
			return nil, err
		}
		c, err := e.connect(args, base)
		if err != nil {
			e.Close()
			return nil, err
		}
		e.all = append(e.all, c)
		e.pool <- c
	}
	if before, after := releaseStartupPages(libPath); before > 0 {
		e.logger.Info("gave the kernel back the engine's start-up code pages", "resident_mib_before", before>>20, "resident_mib_after", after>>20)
	}
	return e, nil
}

// connect opens one connection, restoring Go's signal handlers after it
// (chDB re-applies its opt-out reset on every connect).
func (e *Engine) connect(args []string, base map[string]string) (*conn, error) {
	// argv is Go memory holding Go pointers, passed to C: the strings it
	// points to are pinned for the call.
	var pin runtime.Pinner
	defer pin.Unpin()
	cargs := make([][]byte, len(args))
	argv := make([]*byte, len(args)+1)
	for i, a := range args {
		cargs[i] = cString(a)
		argv[i] = &cargs[i][0]
		pin.Pin(argv[i])
	}
	handle := e.lib.connect(int32(len(args)), &argv[0])
	runtime.KeepAlive(cargs)
	runtime.KeepAlive(argv)
	e.restoreSignals("connect")
	if handle == nil || *(*unsafe.Pointer)(handle) == nil {
		return nil, fmt.Errorf("chdb: connect to %s failed (another process has it, this process has another path open, or a setting in %q is bad; the engine's message is on standard error)", e.path, args[2:])
	}
	return &conn{handle: handle, base: base, settings: maps.Clone(base)}, nil
}

func (e *Engine) restoreSignals(when string) {
	changed, err := e.signals.restore()
	if err != nil {
		e.logger.Error("chdb: restore Go's signal handlers", "when", when, "err", err)
		return
	}
	if len(changed) > 0 {
		e.logger.Debug("chdb: gave Go back its signal handlers", "when", when, "signals", fmt.Sprint(changed))
	}
}

// Path is the data directory.
func (e *Engine) Path() string { return e.path }

// Statement is one SQL statement for Exec.
type Statement struct {
	// SQL is the statement (for an INSERT with Input, without its FORMAT
	// clause).
	SQL []byte
	// Input, when set, is the INSERT's rows in InputFormat, read in pieces
	// of InsertPiece bytes and handed to the engine's parser as they come
	// (binary-safe): neither side holds the whole of a large INSERT's data
	// as one buffer. Input is read to its end, or until an error, in the
	// goroutine that runs the statement.
	Input       io.Reader
	InputFormat string
	// Format is the output format ("Native", "TabSeparated", ...).
	Format string
	// Settings apply to this statement only.
	Settings map[string]string
	// Params bind {name:Type} placeholders server-side.
	Params map[string]string
}

// Result is a statement's output, held in chDB's memory until Close (which
// Engine.Close waits for).
type Result struct {
	lib  *library
	res  unsafe.Pointer
	done func() // counts the result out of the engine's busy
	data []byte
}

// Bytes is the output, valid until Close.
func (r *Result) Bytes() []byte { return r.data }

// Close frees the output.
func (r *Result) Close() {
	if r.res != nil {
		r.lib.destroyResult(r.res)
		r.res, r.data = nil, nil
		if r.done != nil {
			r.done()
		}
	}
}

// Error is a statement chDB refused or failed: Message is ClickHouse's own
// text ("Code: 60. DB::Exception: ...").
type Error struct {
	Message string
}

// Error is the engine's message, prefixed with the package's name.
func (e *Error) Error() string { return "chdb: " + e.Message }

// ErrClosed is returned by Exec after Close.
var ErrClosed = errors.New("chdb: engine closed")

// Exec runs st on a free connection, waiting for one as long as ctx allows.
// A statement that has started runs to its end inside chDB even when ctx
// ends first: Exec then returns ctx's error and frees the output itself.
func (e *Engine) Exec(ctx context.Context, st Statement) (*Result, error) {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, ErrClosed
	}
	e.busy.Add(1)
	e.mu.Unlock()
	var c *conn
	select {
	case c = <-e.pool:
	case <-ctx.Done():
		e.busy.Done()
		return nil, ctx.Err()
	}
	type outcome struct {
		res *Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		defer e.busy.Done()
		res, err := e.run(c, st)
		e.pool <- c
		done <- outcome{res, err}
	}()
	select {
	case o := <-done:
		return o.res, o.err
	case <-ctx.Done():
		go func() {
			if o := <-done; o.res != nil {
				o.res.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// run brings c's session settings to st's, then runs st.
func (e *Engine) run(c *conn, st Statement) (*Result, error) {
	for name := range st.Settings { // the base's were checked by Open
		if !settingNameRE.MatchString(name) {
			return nil, &Error{Message: fmt.Sprintf("setting name %q: must match %s", name, settingNameRE)}
		}
	}
	want := c.wanted(st.Settings)
	if set := c.settingsDiff(want); set != "" {
		res, err := e.query(c, []byte(set), "TabSeparated", nil)
		if err != nil {
			return nil, err
		}
		res.Close()
		c.settings = want
	}
	if st.Input != nil {
		return e.insert(c, st.SQL, st.InputFormat, st.Input)
	}
	format := st.Format
	if format == "" {
		format = "TabSeparated"
	}
	return e.query(c, st.SQL, format, st.Params)
}

// InsertPiece is the most an INSERT's data is read and handed to the engine
// at a time. The engine copies each piece into a queue of at most 16 that its
// parser drains on a thread of its own, so an INSERT holds at most 4 MiB of
// raw data on the engine's side and one piece on Go's, whatever its size
// (read whole, a batch of 8 MiB was held three times over: Go's growing
// read buffer, its final copy, and the engine's copy of it).
const InsertPiece = 256 << 10

// insert streams data, read in pieces, into the INSERT statement sql on c.
// A read or append that fails cancels the statement (the stream is
// destroyed without done). tally's INSERTs are one Native block each
// (clickhouse-go's batch), so a read that fails midway cancels before the
// engine has parsed a block, and nothing is written. One that fails after
// the block's last byte (the client gone just before the end of its body)
// cancels after a whole block: chDB 26.7 then keeps the table referenced,
// and a DROP … SYNC of it waits forever (docs/benchmarks.md, memory,
// fourth round; internal/testenv drops its databases without SYNC).
func (e *Engine) insert(c *conn, sql []byte, format string, data io.Reader) (*Result, error) {
	if len(sql) == 0 || format == "" {
		return nil, &Error{Message: "Code: 62. DB::Exception: INSERT with data needs a statement and a format. (SYNTAX_ERROR)"}
	}
	f := []byte(format)
	stream := e.lib.insertStream(c.value(), &sql[0], uintptr(len(sql)), &f[0], uintptr(len(f)))
	runtime.KeepAlive(sql)
	runtime.KeepAlive(f)
	if stream == nil {
		return nil, &Error{Message: "no insert stream (connection closed?)"}
	}
	defer e.lib.insertDestroy(stream)
	if msg := e.lib.insertError(stream); msg != "" {
		return nil, &Error{Message: strings.TrimSpace(msg)}
	}
	piece := e.pieces.Get().(*[]byte)
	defer e.pieces.Put(piece)
	buf := *piece
	for {
		n, err := io.ReadFull(data, buf)
		if n > 0 {
			ok := e.lib.insertAppend(stream, &buf[0], uintptr(n))
			runtime.KeepAlive(buf)
			if ok != 0 {
				msg := e.lib.insertError(stream)
				if msg == "" {
					msg = "insert stream refused the data"
				}
				return nil, &Error{Message: strings.TrimSpace(msg)}
			}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			// Not an *Error: the statement did not fail, its input did
			// (the client closed the body); the stream is cancelled.
			return nil, fmt.Errorf("chdb: read the INSERT's data: %w", err)
		}
	}
	return e.result(e.lib.insertDone(stream))
}

// wanted is the session settings a statement with these settings runs
// under: the connection's base with the statement's over it.
func (c *conn) wanted(statement map[string]string) map[string]string {
	want := maps.Clone(c.base)
	if want == nil {
		want = make(map[string]string, len(statement))
	}
	maps.Copy(want, statement)
	return want
}

// settingsDiff is the SET statement that turns c's session settings into
// want ("" when they match): changed ones set, dropped ones back to
// DEFAULT. want includes the connection's base settings, so only settings
// no one configured go back to the engine's default.
func (c *conn) settingsDiff(want map[string]string) string {
	var parts []string
	for name, v := range want {
		if old, ok := c.settings[name]; !ok || old != v {
			parts = append(parts, name+" = "+quote(v))
		}
	}
	for name := range c.settings {
		if _, ok := want[name]; !ok {
			parts = append(parts, name+" = DEFAULT")
		}
	}
	if len(parts) == 0 {
		return ""
	}
	sort.Strings(parts)
	return "SET " + strings.Join(parts, ", ")
}

// literalEscaper escapes a ClickHouse string literal's backslashes and quotes.
var literalEscaper = strings.NewReplacer(`\`, `\\`, `'`, `\'`)

// quote is a ClickHouse string literal; settings parse their value from it.
func quote(s string) string { return "'" + literalEscaper.Replace(s) + "'" }

func (e *Engine) query(c *conn, sql []byte, format string, params map[string]string) (*Result, error) {
	if len(sql) == 0 {
		return nil, &Error{Message: "Code: 62. DB::Exception: Empty query. (SYNTAX_ERROR)"}
	}
	f := []byte(format)
	var res unsafe.Pointer
	if len(params) == 0 {
		res = e.lib.query(c.value(), &sql[0], uintptr(len(sql)), &f[0], uintptr(len(f)))
	} else {
		names := make([][]byte, 0, len(params))
		values := make([][]byte, 0, len(params))
		for k, v := range params {
			names = append(names, []byte(k+"\x00"))
			values = append(values, []byte(v+"\x00"))
		}
		// Arrays of Go pointers passed to C: what they point to is pinned.
		var pin runtime.Pinner
		defer pin.Unpin()
		namePtrs := make([]*byte, len(names))
		valuePtrs := make([]*byte, len(values))
		nameLens := make([]uintptr, len(names))
		valueLens := make([]uintptr, len(values))
		for i := range names {
			namePtrs[i], nameLens[i] = &names[i][0], uintptr(len(names[i])-1)
			valuePtrs[i], valueLens[i] = &values[i][0], uintptr(len(values[i])-1)
			pin.Pin(namePtrs[i])
			pin.Pin(valuePtrs[i])
		}
		res = e.lib.queryWithParams(c.value(), &sql[0], uintptr(len(sql)), &f[0], uintptr(len(f)),
			&namePtrs[0], &nameLens[0], &valuePtrs[0], &valueLens[0], uintptr(len(params)))
		runtime.KeepAlive(names)
		runtime.KeepAlive(values)
		runtime.KeepAlive(namePtrs)
		runtime.KeepAlive(valuePtrs)
		runtime.KeepAlive(nameLens)
		runtime.KeepAlive(valueLens)
	}
	runtime.KeepAlive(sql)
	runtime.KeepAlive(f)
	return e.result(res)
}

// result wraps a chdb_result, or its error.
func (e *Engine) result(res unsafe.Pointer) (*Result, error) {
	if res == nil {
		return nil, &Error{Message: "no result (connection closed?)"}
	}
	if msg := e.lib.resultError(res); msg != "" {
		e.lib.destroyResult(res)
		return nil, &Error{Message: strings.TrimSpace(msg)}
	}
	e.busy.Add(1)
	r := &Result{lib: e.lib, res: res, done: e.busy.Done}
	if n := e.lib.resultLength(res); n > 0 {
		if buf := e.lib.resultBuffer(res); buf != nil {
			r.data = unsafe.Slice(buf, n)
		}
	}
	return r, nil
}

// Close waits for running statements and for their results to be closed,
// then closes every connection.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	e.mu.Unlock()
	e.busy.Wait()
	for _, c := range e.all {
		e.lib.closeConn(c.handle)
	}
	e.all = nil
	return nil
}
