package testenv

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

const (
	// templateDir holds the config templates shared with deploy/clickhouse/start.sh,
	// relative to the module root.
	templateDir = "deploy/clickhouse"
	// clickHouseReadyTimeout bounds how long a starting server may take to answer.
	clickHouseReadyTimeout = 60 * time.Second
	// clickHouseStopGrace is how long Stop waits after SIGTERM before SIGKILL.
	clickHouseStopGrace = 30 * time.Second
	// startAttempts is how many fresh port pairs a new server tries, in case
	// another process takes a free port between FreePort and the server's bind.
	startAttempts = 3
)

// shared is the one ClickHouse server of a test binary. It is package-level
// state because a test binary is one process whose tests all share the server:
// no single test owns it, so it lives until Main stops it after m.Run.
var shared sharedClickHouse

// sharedClickHouse starts the shared server once, on first use.
type sharedClickHouse struct {
	mainCalled atomic.Bool // Main is running this binary's tests
	once       sync.Once
	server     *ClickHouseServer
	err        error
}

// get returns the shared server, starting it on the first call.
func (s *sharedClickHouse) get() (*ClickHouseServer, error) {
	s.once.Do(func() {
		dir, err := os.MkdirTemp("", "tally-clickhouse-")
		if err != nil {
			s.err = fmt.Errorf("create data directory: %w", err)
			return
		}
		s.server, s.err = startClickHouse(dir)
		if s.err != nil {
			_ = os.RemoveAll(dir)
		}
	})
	return s.server, s.err
}

// close kills the shared server, if one was started, and deletes its files.
func (s *sharedClickHouse) close() error {
	if s.server == nil {
		return nil
	}
	if err := s.server.stop(syscall.SIGKILL); err != nil {
		return fmt.Errorf("stop shared ClickHouse: %w", err)
	}
	if err := os.RemoveAll(s.server.Dir); err != nil {
		return fmt.Errorf("remove shared ClickHouse directory: %w", err)
	}
	return nil
}

// ClickHouseServer is a clickhouse-server process private to a test binary
// (ClickHouse) or to one test (StartClickHouse), listening on 127.0.0.1.
type ClickHouseServer struct {
	// Addr is the host:port of the native protocol, for clickhouse-go.
	Addr string
	// HTTPAddr is the host:port of the HTTP interface.
	HTTPAddr string
	// Dir holds the server's config, data and logs (log/).
	Dir string

	command  []string     // binary and leading arguments, without --config-file
	dbSerial atomic.Int64 // numbers the databases NewDatabase creates

	mu   sync.Mutex
	proc *process // nil while stopped
}

// ClickHouse returns the ClickHouse server shared by all tests of this test
// binary, starting it on first use. The package's TestMain must call Main,
// which stops the server after the tests. Tests that stop or restart a server
// should use StartClickHouse, so as not to disturb other tests.
func ClickHouse(t testing.TB) *ClickHouseServer {
	t.Helper()
	if !shared.mainCalled.Load() {
		t.Fatalf("testenv.ClickHouse needs testenv.Main to stop the server: add\n\tfunc TestMain(m *testing.M) { testenv.Main(m) }\nto this package's tests")
	}
	server, err := shared.get()
	if err != nil {
		t.Fatalf("testenv: ClickHouse: %v", err)
	}
	return server
}

// StartClickHouse starts a ClickHouse server owned by this test, with its data
// in t.TempDir(), and kills it when the test ends. Use it for tests that Stop,
// Kill or Restart the server.
func StartClickHouse(t testing.TB) *ClickHouseServer {
	t.Helper()
	server, err := startClickHouse(t.TempDir())
	if err != nil {
		t.Fatalf("testenv: ClickHouse: %v", err)
	}
	t.Cleanup(func() {
		if err := server.stop(syscall.SIGKILL); err != nil {
			t.Errorf("testenv: stop ClickHouse: %v", err)
		}
	})
	return server
}

// startClickHouse starts a server keeping its files in dir, on free ports.
func startClickHouse(dir string) (*ClickHouseServer, error) {
	command, err := clickHouseCommand()
	if err != nil {
		return nil, err
	}
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	var lastErr error
	for attempt := 0; attempt < startAttempts; attempt++ {
		tcpPort, httpPort, err := twoFreePorts()
		if err != nil {
			return nil, err
		}
		if err := writeClickHouseConfig(filepath.Join(root, templateDir), dir, tcpPort, httpPort); err != nil {
			return nil, err
		}
		server := &ClickHouseServer{
			Addr:     net.JoinHostPort("127.0.0.1", strconv.Itoa(tcpPort)),
			HTTPAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(httpPort)),
			Dir:      dir,
			command:  command,
		}
		lastErr = server.start()
		if lastErr == nil {
			return server, nil
		}
	}
	return nil, lastErr
}

// twoFreePorts returns two distinct free ports.
func twoFreePorts() (int, int, error) {
	first, err := freePort()
	if err != nil {
		return 0, 0, err
	}
	for {
		second, err := freePort()
		if err != nil {
			return 0, 0, err
		}
		if second != first {
			return first, second, nil
		}
	}
}

// clickHouseCommand finds the server binary: $TALLY_CLICKHOUSE_BIN, else
// clickhouse-server (Debian installs it in /usr/sbin), else the combined
// clickhouse binary of upstream packages with its "server" subcommand.
func clickHouseCommand() ([]string, error) {
	withSubcommand := func(path string) []string {
		if filepath.Base(path) == "clickhouse" {
			return []string{path, "server"}
		}
		return []string{path}
	}
	if path := os.Getenv("TALLY_CLICKHOUSE_BIN"); path != "" {
		if firstExecutable(path) == "" {
			return nil, fmt.Errorf("TALLY_CLICKHOUSE_BIN=%s is not an executable file", path)
		}
		return withSubcommand(path), nil
	}
	onPath, _ := exec.LookPath("clickhouse-server")
	if path := firstExecutable(onPath, "/usr/bin/clickhouse-server", "/usr/sbin/clickhouse-server"); path != "" {
		return []string{path}, nil
	}
	onPath, _ = exec.LookPath("clickhouse")
	if path := firstExecutable(onPath, "/usr/bin/clickhouse"); path != "" {
		return withSubcommand(path), nil
	}
	return nil, fmt.Errorf("no clickhouse-server binary (looked for $TALLY_CLICKHOUSE_BIN, clickhouse-server on PATH, "+
		"/usr/bin/clickhouse-server, /usr/sbin/clickhouse-server, /usr/bin/clickhouse); "+installHint,
		"clickhouse-server")
}

// writeClickHouseConfig renders config.xml and users.xml from the templates in
// templates into dir, and creates the directories the config names.
func writeClickHouseConfig(templates, dir string, tcpPort, httpPort int) error {
	for _, sub := range []string{"data", "tmp", "user_files", "format_schemas", "log"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return fmt.Errorf("create ClickHouse directory: %w", err)
		}
	}
	for _, name := range []string{"config.xml", "users.xml"} {
		template, err := os.ReadFile(filepath.Join(templates, name+".tmpl"))
		if err != nil {
			return fmt.Errorf("read ClickHouse config template: %w", err)
		}
		rendered, err := renderClickHouseConfig(string(template), dir, tcpPort, httpPort)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(rendered), 0o644); err != nil {
			return fmt.Errorf("write ClickHouse config: %w", err)
		}
	}
	return nil
}

// renderClickHouseConfig replaces the template's placeholders, the same ones
// deploy/clickhouse/start.sh replaces.
func renderClickHouseConfig(template, dir string, tcpPort, httpPort int) (string, error) {
	var escapedDir bytes.Buffer
	if err := xml.EscapeText(&escapedDir, []byte(dir)); err != nil {
		return "", fmt.Errorf("escape ClickHouse directory: %w", err)
	}
	rendered := strings.NewReplacer(
		"@@DIR@@", escapedDir.String(),
		"@@TCP_PORT@@", strconv.Itoa(tcpPort),
		"@@HTTP_PORT@@", strconv.Itoa(httpPort),
	).Replace(template)
	if i := strings.Index(rendered, "@@"); i >= 0 {
		end := min(i+40, len(rendered))
		return "", fmt.Errorf("ClickHouse config template has an unknown placeholder near %q", rendered[i:end])
	}
	return rendered, nil
}

// start launches the process and waits until it answers a ping.
func (s *ClickHouseServer) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil && s.proc.running() {
		return fmt.Errorf("ClickHouse at %s is already running", s.Addr)
	}
	output, err := os.OpenFile(filepath.Join(s.Dir, "log", "stdout.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open ClickHouse output log: %w", err)
	}
	// The child holds its own copy of the descriptor.
	defer output.Close()
	args := append(s.command[1:len(s.command):len(s.command)], "--config-file="+filepath.Join(s.Dir, "config.xml"))
	proc, err := startProcess(s.command[0], args, output)
	if err != nil {
		return err
	}
	if err := s.waitReady(proc); err != nil {
		_ = proc.stop(syscall.SIGKILL, 0)
		return err
	}
	s.proc = proc
	return nil
}

// PID is the running server's process id, 0 while it is stopped: the
// benchmark smoke test reads its CPU time.
func (s *ClickHouseServer) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil || !s.proc.running() {
		return 0
	}
	return s.proc.pid
}

// waitReady polls the native port until a ping succeeds, the process exits,
// or clickHouseReadyTimeout passes.
func (s *ClickHouseServer) waitReady(proc *process) error {
	deadline := time.Now().Add(clickHouseReadyTimeout)
	for {
		err := s.ping()
		if err == nil {
			return nil
		}
		if !proc.running() {
			return fmt.Errorf("clickhouse-server exited during startup (%v); %s", proc.waitErr, s.logTail())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ClickHouse at %s not ready after %s: %w; %s", s.Addr, clickHouseReadyTimeout, err, s.logTail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ping opens a native connection and pings the server.
func (s *ClickHouseServer) ping() error {
	conn, err := net.DialTimeout("tcp", s.Addr, time.Second)
	if err != nil {
		return err
	}
	conn.Close()
	chConn, err := s.open("default")
	if err != nil {
		return err
	}
	defer chConn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return chConn.Ping(ctx)
}

// logTail returns the end of the server's output and error log.
func (s *ClickHouseServer) logTail() string {
	return fmt.Sprintf("server output:\n%s\nerror log:\n%s",
		tailFile(filepath.Join(s.Dir, "log", "stdout.log"), 2000),
		tailFile(filepath.Join(s.Dir, "log", "clickhouse-server.err.log"), 2000))
}

// stop signals the process and waits for it to exit.
func (s *ClickHouseServer) stop(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return nil
	}
	err := s.proc.stop(sig, clickHouseStopGrace)
	s.proc = nil
	return err
}

// running reports whether the server process is up.
func (s *ClickHouseServer) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc != nil && s.proc.running()
}

// Stop shuts the server down gracefully (SIGTERM, then SIGKILL after 30 s) and
// waits for it to exit. Data stays in Dir; Start brings the server back.
func (s *ClickHouseServer) Stop(t testing.TB) {
	t.Helper()
	if err := s.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("testenv: stop ClickHouse: %v", err)
	}
}

// Kill ends the server with SIGKILL, as a crash would, and waits for it to exit.
func (s *ClickHouseServer) Kill(t testing.TB) {
	t.Helper()
	if err := s.stop(syscall.SIGKILL); err != nil {
		t.Fatalf("testenv: kill ClickHouse: %v", err)
	}
}

// Start starts a stopped server again on the same ports and data directory
// and waits until it answers.
func (s *ClickHouseServer) Start(t testing.TB) {
	t.Helper()
	if err := s.start(); err != nil {
		t.Fatalf("testenv: start ClickHouse: %v", err)
	}
}

// Restart stops the server gracefully and starts it again.
func (s *ClickHouseServer) Restart(t testing.TB) {
	t.Helper()
	s.Stop(t)
	s.Start(t)
}

// open returns a clickhouse-go native connection to database, not yet used.
func (s *ClickHouseServer) open(database string) (driver.Conn, error) {
	conn, err := clickhouse.Open(&clickhouse.Options{
		Addr:        []string{s.Addr},
		Auth:        clickhouse.Auth{Database: database, Username: "default"},
		DialTimeout: 5 * time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("open ClickHouse connection to %s: %w", s.Addr, err)
	}
	return conn, nil
}

// Conn returns a native-protocol connection to database that is closed when
// the test ends.
func (s *ClickHouseServer) Conn(t testing.TB, database string) driver.Conn {
	t.Helper()
	conn, err := s.open(database)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := conn.Ping(ctx); err != nil {
		t.Fatalf("testenv: ping ClickHouse at %s (database %q): %v", s.Addr, database, err)
	}
	return conn
}

// NewDatabase creates an empty database with a name unique to this server and
// named after the test, and drops it when the test ends (unless the server is
// stopped by then).
func (s *ClickHouseServer) NewDatabase(t testing.TB) string {
	t.Helper()
	name, err := newDatabaseName(t, &s.dbSerial)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	if err := s.exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(func() {
		if !s.running() {
			return
		}
		if err := s.exec("DROP DATABASE IF EXISTS " + name); err != nil {
			t.Errorf("testenv: %v", err)
		}
	})
	return name
}

// execTimeout bounds one exec. A DROP DATABASE on ClickHouse 18.16 waits
// for the queries and merges on its tables to stop, which on two cores
// shared with the rest of the suite has taken over 30 s once; a cleanup
// that times out fails its test, so the bound is generous.
const execTimeout = 2 * time.Minute

// exec runs one statement in the default database on a short-lived connection.
func (s *ClickHouseServer) exec(statement string) error {
	conn, err := s.open("default")
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), execTimeout)
	defer cancel()
	if err := conn.Exec(ctx, statement); err != nil {
		return fmt.Errorf("ClickHouse %q: %w", statement, err)
	}
	return nil
}

// maxNamePart bounds the part of a database name taken from the test name.
const maxNamePart = 40

// databaseNamePart turns a test name into lower-case letters, digits and
// underscores, at most maxNamePart long.
func databaseNamePart(testName string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(testName) {
		if b.Len() == maxNamePart {
			break
		}
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}
