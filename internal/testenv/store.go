package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tallyhq/tally/schema"
	"github.com/tallyhq/tally/schema/chdb"
)

// StoreEnv names the environment variable that picks the store the store,
// query, server and end-to-end tests run on: "clickhouse" (the default,
// Debian's ClickHouse server) or "embedded" (the in-process chDB engine,
// ClickHouse 26.x). `make test` runs those suites once on each.
const StoreEnv = "TALLY_TEST_STORE"

// Store kinds StoreEnv takes.
const (
	StoreClickHouse = "clickhouse"
	StoreEmbedded   = "embedded"
)

// StoreKind is the store this test binary runs on, from StoreEnv.
func StoreKind(t testing.TB) string {
	t.Helper()
	switch v := os.Getenv(StoreEnv); v {
	case "", StoreClickHouse:
		return StoreClickHouse
	case StoreEmbedded:
		return StoreEmbedded
	default:
		t.Fatalf("testenv: $%s=%q: want %q or %q", StoreEnv, v, StoreClickHouse, StoreEmbedded)
		return ""
	}
}

// Database is one test's own database on the binary's store.
type Database struct {
	// Name is the database.
	Name string
	// Addr is the ClickHouse server's native address ("" on the embedded store).
	Addr string
	// Server is the ClickHouse server (nil on the embedded store).
	Server *ClickHouseServer
	// Engine is the embedded engine (nil on a server).
	Engine *chdb.Engine
}

// NewStoreDatabase creates an empty database for this test on the store
// StoreEnv picks (a ClickHouse server shared by the binary, or one embedded
// engine shared by the binary), dropped when the test ends.
func NewStoreDatabase(t testing.TB) Database {
	t.Helper()
	if StoreKind(t) == StoreClickHouse {
		server := ClickHouse(t)
		return Database{Name: server.NewDatabase(t), Addr: server.Addr, Server: server}
	}
	engine := Embedded(t)
	name, err := newDatabaseName(t, &embedded.dbSerial)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	if err := embeddedExec(engine, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(func() {
		// Not SYNC: the engine drops the tables once nothing references
		// them. chDB 26.7 keeps a table referenced after an INSERT through
		// its streaming insert fails once the engine has parsed a block
		// (docs/benchmarks.md, memory, fourth round), and a SYNC drop of
		// its database then waits forever: under the whole suite's load
		// two tests' cleanups waited so, every assertion of theirs having
		// held (a test's server stopping mid-insert, likely; not seen
		// alone).
		if err := embeddedExec(engine, "DROP DATABASE IF EXISTS "+name); err != nil {
			t.Errorf("testenv: %v", err)
		}
	})
	return Database{Name: name, Engine: engine}
}

// OpenStore opens a migrated store on a fresh database of this test's
// store, closed when the test ends: what most tests of the packages over
// the store start from.
func OpenStore(t testing.TB) *schema.Store {
	t.Helper()
	ctx := context.Background()
	s, err := schema.Open(ctx, NewStoreDatabase(t).StoreConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// StoreConfig is the schema.Config that opens the database on its store.
func (d Database) StoreConfig() schema.Config {
	c := schema.Config{Addr: d.Addr, Database: d.Name}
	if d.Engine != nil {
		c.Embedded = d.Engine.Transport()
	}
	return c
}

// embedded is the one embedded engine of a test binary: chDB keeps one data
// path per process, so no test owns it; Main closes it after m.Run.
var embedded sharedEngine

type sharedEngine struct {
	once     sync.Once
	engine   *chdb.Engine
	dir      string
	err      error
	dbSerial atomic.Int64
}

// Embedded returns the embedded engine shared by this test binary, opening
// it on first use with its data in a temporary directory. The library is
// found as tally finds it ($CHDB_LIB_PATH, .tally/lib); a missing one fails
// the test with how to get it.
func Embedded(t testing.TB) *chdb.Engine {
	t.Helper()
	if !shared.mainCalled.Load() {
		t.Fatalf("testenv.Embedded needs testenv.Main to close the engine: add\n\tfunc TestMain(m *testing.M) { testenv.Main(m) }\nto this package's tests")
	}
	embedded.once.Do(func() {
		dir, err := os.MkdirTemp("", "tally-chdb-")
		if err != nil {
			embedded.err = fmt.Errorf("create data directory: %w", err)
			return
		}
		embedded.dir = dir
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		embedded.engine, embedded.err = chdb.Open(ctx, chdb.Config{Path: dir, Settings: schema.EmbeddedSettings()})
	})
	if embedded.err != nil {
		if errors.Is(embedded.err, chdb.ErrLibraryNotFound) {
			t.Fatalf("testenv: embedded store: %v\n(`make test` fetches it via scripts/deps.sh)", embedded.err)
		}
		t.Fatalf("testenv: embedded store: %v", embedded.err)
	}
	return embedded.engine
}

// close closes the shared engine, if one was opened, and deletes its files.
func (s *sharedEngine) close() error {
	if s.dir == "" {
		return nil
	}
	if s.engine != nil {
		if err := s.engine.Close(); err != nil {
			return fmt.Errorf("close embedded engine: %w", err)
		}
	}
	if err := os.RemoveAll(s.dir); err != nil {
		return fmt.Errorf("remove embedded engine directory: %w", err)
	}
	return nil
}

// newDatabaseName is a database name unique to this binary, named after the test.
func newDatabaseName(t testing.TB, serial *atomic.Int64) (string, error) {
	suffix := make([]byte, 3)
	if _, err := rand.Read(suffix); err != nil {
		return "", fmt.Errorf("random database name: %w", err)
	}
	return fmt.Sprintf("t_%s_%d_%s", databaseNamePart(t.Name()), serial.Add(1), hex.EncodeToString(suffix)), nil
}

func embeddedExec(engine *chdb.Engine, statement string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := engine.Exec(ctx, chdb.Statement{SQL: []byte(statement)})
	if err != nil {
		return fmt.Errorf("embedded store %q: %w", statement, err)
	}
	res.Close()
	return nil
}
