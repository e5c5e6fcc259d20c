package schema

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// Table names. Engines and names come from here only, so that a cluster mode
// (Replicated*/Distributed) can be added without rewriting queries.
const (
	TableSpans      = "spans"
	TableContent    = "content"
	TableMigrations = "schema_migrations"
)

// Config locates the ClickHouse server and database tally uses.
type Config struct {
	Addr        string // host:port of the native protocol
	Database    string
	Username    string
	Password    string
	DialTimeout time.Duration
}

// Store is a connection to tally's ClickHouse database: it applies
// migrations, writes span and content rows, and hands the connection and
// qualified table names to package query, the only other package that
// issues SQL against these tables (reads).
type Store struct {
	conn driver.Conn
	db   string
	caps Capabilities
}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Open connects over the native protocol and detects the server's
// capabilities. The database need not exist yet: Migrate creates it.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if !identRE.MatchString(cfg.Database) {
		return nil, fmt.Errorf("clickhouse database name %q: must match %s", cfg.Database, identRE)
	}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = 5 * time.Second
	}
	user := cfg.Username
	if user == "" {
		user = "default"
	}
	conn, err := clickhouse.Open(&clickhouse.Options{
		Addr:         []string{cfg.Addr},
		Auth:         clickhouse.Auth{Database: "default", Username: user, Password: cfg.Password},
		DialTimeout:  cfg.DialTimeout,
		MaxOpenConns: 16,
		MaxIdleConns: 8,
		Compression:  &clickhouse.Compression{Method: clickhouse.CompressionLZ4},
	})
	if err != nil {
		return nil, fmt.Errorf("open clickhouse %s: %w", cfg.Addr, err)
	}
	s := &Store{conn: conn, db: cfg.Database}
	caps, err := DetectCapabilities(ctx, conn)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("clickhouse %s: %w", cfg.Addr, err)
	}
	s.caps = caps
	return s, nil
}

// Close closes the connection pool.
func (s *Store) Close() error { return s.conn.Close() }

// Conn is the underlying connection, for package query.
func (s *Store) Conn() driver.Conn { return s.conn }

// Database is the database name.
func (s *Store) Database() string { return s.db }

// Capabilities are the detected server capabilities.
func (s *Store) Capabilities() Capabilities { return s.caps }

// Table is a table name qualified with the database, ready for SQL.
func (s *Store) Table(name string) string { return "`" + s.db + "`.`" + name + "`" }

// Ping checks that the server answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.conn.Ping(ctx); err != nil {
		return fmt.Errorf("ping clickhouse: %w", err)
	}
	return nil
}

// InsertSpans writes span rows in one INSERT with an explicit column list
// (ClickHouse 18.16 needs it), appending column by column for speed.
func (s *Store) InsertSpans(ctx context.Context, rows []Span) error {
	if len(rows) == 0 {
		return nil
	}
	return insertColumns(ctx, s.conn, s.Table(TableSpans), spanColumns, rows)
}

// InsertContents writes content rows.
func (s *Store) InsertContents(ctx context.Context, rows []Content) error {
	if len(rows) == 0 {
		return nil
	}
	return insertColumns(ctx, s.conn, s.Table(TableContent), contentColumns, rows)
}

func insertColumns[R any](ctx context.Context, conn driver.Conn, table string, cols []column[R], rows []R) error {
	batch, err := conn.PrepareBatch(ctx, "INSERT INTO "+table+" ("+columnNames(cols)+")")
	if err != nil {
		return fmt.Errorf("prepare insert into %s: %w", table, err)
	}
	defer batch.Abort() //nolint:errcheck // no-op after Send
	for i, c := range cols {
		if err := batch.Column(i).Append(c.extract(rows)); err != nil {
			return fmt.Errorf("insert into %s: column %s: %w", table, c.name, err)
		}
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("insert %d rows into %s: %w", len(rows), table, err)
	}
	return nil
}
