package schema

import (
	"context"
	"fmt"
	"regexp"
	"strings"
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
	// Addr is host:port of the native protocol, or several comma-separated
	// (nodes of a cluster): connections go to the first that answers.
	Addr     string
	Database string
	// Cluster names the cluster (in the servers' remote_servers) whose nodes
	// hold the tables: Replicated tables on every node, Distributed tables
	// over them (see cluster.go). "" is one server, the default.
	Cluster     string
	Username    string
	Password    string
	DialTimeout time.Duration
}

// Store is a connection to tally's ClickHouse database: it applies
// migrations, writes span and content rows, and hands the connection and
// qualified table names to package query, the only other package that
// issues SQL against these tables (reads).
type Store struct {
	conn    driver.Conn
	db      string
	cluster string
	caps    Capabilities
}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Open connects over the native protocol and detects the server's
// capabilities. The database need not exist yet: Migrate creates it.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if !identRE.MatchString(cfg.Database) {
		return nil, fmt.Errorf("clickhouse database name %q: must match %s", cfg.Database, identRE)
	}
	if cfg.Cluster != "" && !identRE.MatchString(cfg.Cluster) {
		return nil, fmt.Errorf("clickhouse cluster name %q: must match %s", cfg.Cluster, identRE)
	}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = 5 * time.Second
	}
	user := cfg.Username
	if user == "" {
		user = "default"
	}
	var addrs []string
	for _, a := range strings.Split(cfg.Addr, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	open := func(settings clickhouse.Settings) (driver.Conn, error) {
		conn, err := clickhouse.Open(&clickhouse.Options{
			Addr:         addrs,
			Settings:     settings,
			Auth:         clickhouse.Auth{Database: "default", Username: user, Password: cfg.Password},
			DialTimeout:  cfg.DialTimeout,
			MaxOpenConns: 16,
			MaxIdleConns: 8,
			Compression:  &clickhouse.Compression{Method: clickhouse.CompressionLZ4},
		})
		if err != nil {
			return nil, fmt.Errorf("open clickhouse %s: %w", cfg.Addr, err)
		}
		return conn, nil
	}
	var settings clickhouse.Settings
	if cfg.Cluster != "" {
		// An INSERT into a Distributed table returns once the rows are on
		// their shards, not when they are queued on this node: that is what
		// acknowledging a write means.
		settings = clickhouse.Settings{"insert_distributed_sync": 1}
	}
	conn, err := open(settings)
	if err != nil {
		return nil, err
	}
	caps, err := DetectCapabilities(ctx, conn)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("clickhouse %s: %w", cfg.Addr, err)
	}
	if cfg.Cluster != "" {
		if conn, err = clusterSettings(ctx, conn, caps, settings, open); err != nil {
			return nil, fmt.Errorf("clickhouse %s, cluster %s: %w", cfg.Addr, cfg.Cluster, err)
		}
	}
	s := &Store{conn: conn, db: cfg.Database, cluster: cfg.Cluster, caps: caps}
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
