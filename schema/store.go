package schema

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"iter"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
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
	// Embedded, when set, is an in-process engine's ClickHouse HTTP
	// interface (package schema/chdb's Transport): the store talks to it
	// through clickhouse-go's HTTP client, and Addr only names it in
	// messages. Cluster mode needs servers.
	Embedded http.RoundTripper
	// Engine, when set, is closed after the connection pool when the store
	// closes: the embedded engine this store alone uses.
	Engine io.Closer
	// BlockBytes bounds the row data (Span.DataBytes) of one block an
	// INSERT sends over the native protocol (a larger row is a block of
	// its own): a larger INSERT goes as
	// several blocks of the one statement, which the server squashes into
	// one part, so clickhouse-go's column and encode buffers grow to a
	// block, not to the INSERT, and are reused block to block. 0 is
	// DefaultBlockBytes; the HTTP client (the embedded store) sends an
	// INSERT as one block whatever it is.
	BlockBytes int64
	// WriteTimeout bounds one write to a server connection while nothing
	// else bounds it (clickhouse-go sets no deadline while it sends an
	// INSERT's blocks), so a server that stops reading fails the INSERT
	// instead of holding the writer. 0 is DefaultWriteTimeout.
	WriteTimeout time.Duration
}

// DefaultBlockBytes is Config.BlockBytes unless set: 1 MiB, about 1,000
// agent spans. In BenchmarkInsertSpans blocks of 256 KiB cost the client
// about the same CPU as 1 MiB ones, 4 MiB ones 1.5 times as much and 16 MiB
// ones (the writer's whole INSERT) 2.6 times, mostly growing and zeroing
// buffers.
const DefaultBlockBytes = 1 << 20

// Store is a connection to tally's ClickHouse database: it applies
// migrations, writes span and content rows, and hands the connection and
// qualified table names to package query, the only other package that
// issues SQL against these tables (reads).
type Store struct {
	conn       driver.Conn
	owned      io.Closer // closed with the store (Config.Engine); may be nil
	embedded   bool
	db         string
	cluster    string
	addr       string
	blockBytes int64 // Config.BlockBytes

	mu       sync.Mutex
	caps     Capabilities
	detected bool // caps hold the server's (OpenDeferred leaves them to Detect)
}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Open connects over the native protocol and detects the server's
// capabilities. The database need not exist yet: Migrate creates it.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	return open(ctx, cfg, false)
}

func open(ctx context.Context, cfg Config, deferred bool) (*Store, error) {
	if !identRE.MatchString(cfg.Database) {
		return nil, fmt.Errorf("clickhouse database name %q: must match %s", cfg.Database, identRE)
	}
	if cfg.Cluster != "" && !identRE.MatchString(cfg.Cluster) {
		return nil, fmt.Errorf("clickhouse cluster name %q: must match %s", cfg.Cluster, identRE)
	}
	switch {
	case cfg.BlockBytes < 0:
		return nil, fmt.Errorf("insert block bytes %d: must be positive (0 for the default, %d)", cfg.BlockBytes, DefaultBlockBytes)
	case cfg.BlockBytes == 0:
		cfg.BlockBytes = DefaultBlockBytes
	}
	switch {
	case cfg.WriteTimeout < 0:
		return nil, fmt.Errorf("write timeout %s: must be positive (0 for the default, %s)", cfg.WriteTimeout, DefaultWriteTimeout)
	case cfg.WriteTimeout == 0:
		cfg.WriteTimeout = DefaultWriteTimeout
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
	if cfg.Embedded != nil {
		if cfg.Cluster != "" {
			return nil, fmt.Errorf("cluster %s: cluster mode needs ClickHouse servers, not the embedded store", cfg.Cluster)
		}
		if cfg.Addr == "" {
			cfg.Addr = "embedded"
		}
		// The URL host the HTTP client builds requests for: the transport
		// ignores it, but it must parse.
		addrs = []string{"embedded"}
	}
	openConn := func(settings clickhouse.Settings) (driver.Conn, error) {
		if cfg.Embedded != nil {
			conn, err := clickhouse.Open(&clickhouse.Options{
				Protocol: clickhouse.HTTP,
				Addr:     addrs,
				Auth:     clickhouse.Auth{Database: "default"},
				TransportFunc: func(*http.Transport) (http.RoundTripper, error) {
					return cfg.Embedded, nil
				},
				MaxOpenConns: 16,
				// An HTTP connection of clickhouse-go keeps the buffer of
				// the largest INSERT it encoded for as long as it lives
				// (FreeBufOnConnRelease does nothing over HTTP), and on
				// the embedded store that is tally's own heap: few idle
				// connections keep few of them. Opening one is a call in
				// the process (the transport answers its hello itself).
				MaxIdleConns: 2,
			})
			if err != nil {
				return nil, fmt.Errorf("open embedded store: %w", err)
			}
			return conn, nil
		}
		conn, err := clickhouse.Open(&clickhouse.Options{
			Addr:         addrs,
			Settings:     settings,
			Auth:         clickhouse.Auth{Database: "default", Username: user, Password: cfg.Password},
			DialTimeout:  cfg.DialTimeout,
			DialContext:  dialDeadline(cfg.DialTimeout, cfg.WriteTimeout),
			MaxOpenConns: 16,
			MaxIdleConns: 8,
			Compression:  &clickhouse.Compression{Method: clickhouse.CompressionLZ4},
			// Drop a connection's encode and compress buffers when it goes
			// back to the pool: they grow to the largest INSERT it sent, and
			// with large content (1 MiB tool results) every pooled
			// connection would keep a batch's worth.
			FreeBufOnConnRelease: true,
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
	conn, err := openConn(settings)
	if err != nil {
		return nil, err
	}
	if deferred {
		if cfg.Cluster != "" {
			conn.Close()
			return nil, fmt.Errorf("clickhouse %s: cluster mode needs the server reachable at start (its settings depend on it)", cfg.Addr)
		}
		return &Store{conn: conn, owned: cfg.Engine, embedded: cfg.Embedded != nil, db: cfg.Database, addr: cfg.Addr, blockBytes: cfg.BlockBytes}, nil
	}
	caps, err := DetectCapabilities(ctx, conn)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("clickhouse %s: %w", cfg.Addr, err)
	}
	if cfg.Cluster != "" {
		if conn, err = clusterSettings(ctx, conn, caps, settings, openConn); err != nil {
			return nil, fmt.Errorf("clickhouse %s, cluster %s: %w", cfg.Addr, cfg.Cluster, err)
		}
	}
	s := &Store{conn: conn, owned: cfg.Engine, embedded: cfg.Embedded != nil, db: cfg.Database, cluster: cfg.Cluster, addr: cfg.Addr, blockBytes: cfg.BlockBytes, caps: caps, detected: true}
	return s, nil
}

// OpenDeferred is Open for a server that may not answer yet: it sets up the
// connection pool (which dials on first use) without talking to the server,
// so that tally can start, listen and take spans into its durable log during
// a ClickHouse outage. The capabilities are detected by the first Detect or
// Migrate; until then reads and writes simply fail while the server is down.
// Cluster mode needs the server at start: an error.
func OpenDeferred(cfg Config) (*Store, error) {
	return open(context.Background(), cfg, true)
}

// Detect detects the server's capabilities, once: a Store from Open has
// them already, one from OpenDeferred gets them when the server answers.
func (s *Store) Detect(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.detected {
		return nil
	}
	caps, err := DetectCapabilities(ctx, s.conn)
	if err != nil {
		return fmt.Errorf("clickhouse %s: %w", s.addr, err)
	}
	s.caps, s.detected = caps, true
	return nil
}

// Close closes the connection pool, then the store's own embedded engine.
func (s *Store) Close() error {
	err := s.conn.Close()
	if s.owned != nil {
		if cerr := s.owned.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close embedded engine: %w", cerr)
		}
	}
	return err
}

// Embedded says whether the store is the in-process engine.
func (s *Store) Embedded() bool { return s.embedded }

// Conn is the underlying connection, for package query.
func (s *Store) Conn() driver.Conn { return s.conn }

// Database is the database name.
func (s *Store) Database() string { return s.db }

// Capabilities are the detected server capabilities.
// A Store from OpenDeferred has the zero Capabilities until Detect.
func (s *Store) Capabilities() Capabilities {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.caps
}

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
	return insertColumns(ctx, s.conn, s.Table(TableSpans), spanColumns, rows, (*Span).DataBytes, s.blockBytes,
		spanPartitions(s.Capabilities()))
}

// InsertContents writes content rows.
func (s *Store) InsertContents(ctx context.Context, rows []Content) error {
	if len(rows) == 0 {
		return nil
	}
	return insertColumns(ctx, s.conn, s.Table(TableContent), contentColumns, rows, (*Content).DataBytes, s.blockBytes,
		contentPartitions(s.Capabilities()))
}

// insertColumns writes rows in one INSERT, sent in blocks of at most
// blockBytes of row data (ByBytes with size); a nil size sends one block
// (the small tables). parts keeps each statement within the server's
// partition limit (the zero partitioner: one statement).
func insertColumns[R any](ctx context.Context, conn driver.Conn, table string, cols []column[R], rows []R,
	size func(*R) int64, blockBytes int64, parts partitioner[R]) error {
	in, err := beginInsert(ctx, conn, table, cols, size, blockBytes, parts)
	if err != nil {
		return err
	}
	defer in.Abort()
	if err := in.Append(rows); err != nil {
		return err
	}
	return in.Commit()
}

// Insert is one INSERT into a table of rows R, held open while rows are
// appended and stored only by Commit. On the native protocol every block of
// Append goes to the server as soon as the next one starts, so the client
// holds at most one block whatever the statement's size, while the server
// squashes the statement's blocks into one part: a long Insert makes the
// large parts ClickHouse merges least at the memory of a short one. Over
// HTTP (the embedded store) the blocks stay in the client until Commit.
//
// The server refuses a statement whose rows fall into more partitions than
// its max_partitions_per_insert_block (Capabilities.MaxPartitionsPerInsert;
// spans and content are partitioned by the day of their start), and it
// would refuse it for good: so an Insert is a sequence of statements, each
// within that limit. Rows of a partition the open statement does not hold
// yet, past the limit, commit it and open the next one (rows of one Append
// that alone span more partitions are sorted by partition first). A
// failure may thus leave earlier statements of the Insert stored, as an
// aborted statement may be (see Abort). An Insert is not safe for
// concurrent use.
type Insert[R any] struct {
	ctx        context.Context
	conn       driver.Conn
	batch      driver.Batch
	table      string
	cols       []column[R]
	size       func(*R) int64
	blockBytes int64
	rows       int // appended, over all statements
	stmtRows   int // appended to the open statement
	statements int // committed before the open one
	parts      partitioner[R]
	days       map[int32]struct{} // the open statement's partitions
}

// BeginSpans opens an INSERT into the spans table, for a writer that
// appends several batches to one statement (Insert). ctx bounds opening the
// statement and its Commit; each write of the blocks Append sends is
// bounded by Config.WriteTimeout (clickhouse-go's Flush sets no deadline of
// its own).
func (s *Store) BeginSpans(ctx context.Context) (*Insert[Span], error) {
	return beginInsert(ctx, s.conn, s.Table(TableSpans), spanColumns, (*Span).DataBytes, s.blockBytes,
		spanPartitions(s.Capabilities()))
}

// BeginContents opens an INSERT into the content table, as BeginSpans.
func (s *Store) BeginContents(ctx context.Context) (*Insert[Content], error) {
	return beginInsert(ctx, s.conn, s.Table(TableContent), contentColumns, (*Content).DataBytes, s.blockBytes,
		contentPartitions(s.Capabilities()))
}

func beginInsert[R any](ctx context.Context, conn driver.Conn, table string, cols []column[R],
	size func(*R) int64, blockBytes int64, parts partitioner[R]) (*Insert[R], error) {
	in := &Insert[R]{ctx: ctx, conn: conn, table: table, cols: cols, size: size, blockBytes: blockBytes, parts: parts}
	if err := in.prepare(); err != nil {
		return nil, err
	}
	return in, nil
}

// prepare opens the next statement.
func (in *Insert[R]) prepare() error {
	batch, err := in.conn.PrepareBatch(in.ctx, "INSERT INTO "+in.table+" ("+columnNames(in.cols)+")")
	if err != nil {
		return fmt.Errorf("prepare insert into %s: %w", in.table, err)
	}
	in.batch, in.stmtRows = batch, 0
	clear(in.days)
	return nil
}

// next commits the open statement, if it holds rows, and opens another.
func (in *Insert[R]) next() error {
	if in.stmtRows == 0 {
		return nil
	}
	if err := in.batch.Send(); err != nil {
		return fmt.Errorf("insert %d rows into %s (statement %d, at the partition limit of %d): %w",
			in.stmtRows, in.table, in.statements+1, in.parts.limit(), err)
	}
	in.statements++
	return in.prepare()
}

// Append adds rows to the insert, in blocks of at most the store's block
// bytes of row data (Config.BlockBytes), and in statements within the
// server's partition limit (see Insert); it may reorder rows. The columns
// copy what they take, so the caller may reuse rows' memory once Append
// returns. An error leaves the insert unusable: Abort it.
func (in *Insert[R]) Append(rows []R) error {
	limit := in.parts.limit()
	if limit == 0 || len(rows) == 0 {
		return in.appendStatement(rows)
	}
	if in.days == nil {
		in.days = make(map[int32]struct{}, limit)
	}
	// The usual case: the rows' partitions fit beside the statement's,
	// or in a statement of their own.
	fresh, fits := in.parts.newDays(rows, in.days, limit-len(in.days))
	if !fits && in.stmtRows > 0 {
		if err := in.next(); err != nil {
			return err
		}
		fresh, fits = in.parts.newDays(rows, in.days, limit)
	}
	if fits {
		for _, d := range fresh {
			in.days[d] = struct{}{}
		}
		return in.appendStatement(rows)
	}
	// More partitions than one statement takes: by partition, a
	// statement for every limit of them.
	slices.SortStableFunc(rows, func(a, b R) int { return cmp.Compare(in.parts.day(&a), in.parts.day(&b)) })
	start := 0
	for start < len(rows) {
		end, n, last := start, 0, int32(0)
		for end < len(rows) {
			d := in.parts.day(&rows[end])
			if end == start || d != last {
				if n == limit {
					break
				}
				n, last = n+1, d
			}
			end++
		}
		if start > 0 {
			if err := in.next(); err != nil {
				return err
			}
		}
		in.parts.addDays(rows[start:end], in.days)
		if err := in.appendStatement(rows[start:end]); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// appendStatement appends rows to the open statement, in blocks.
func (in *Insert[R]) appendStatement(rows []R) error {
	blocks := slices.Values([][]R{rows})
	if in.size != nil {
		blocks = ByBytes(rows, in.size, in.blockBytes)
	}
	for block := range blocks {
		if len(block) == 0 {
			continue
		}
		if in.stmtRows > 0 {
			// Flush sends the block so far and resets its columns, keeping
			// their buffers for the next (a no-op on HTTP).
			if err := in.batch.Flush(); err != nil {
				return fmt.Errorf("insert into %s: send block at row %d: %w", in.table, in.rows, err)
			}
		}
		if err := appendBlock(in.batch, in.cols, block); err != nil {
			return fmt.Errorf("insert into %s: %w", in.table, err)
		}
		in.rows += len(block)
		in.stmtRows += len(block)
	}
	return nil
}

// Statements is the number of statements the insert has used so far (the
// open one included): more than one only past the partition limit.
func (in *Insert[R]) Statements() int { return in.statements + 1 }

// Rows is the number of rows appended so far.
func (in *Insert[R]) Rows() int { return in.rows }

// Commit sends the last block and ends the statement: its rows are stored
// once Commit returns nil.
func (in *Insert[R]) Commit() error {
	if err := in.batch.Send(); err != nil {
		return fmt.Errorf("insert %d rows into %s: %w", in.stmtRows, in.table, err)
	}
	return nil
}

// Abort ends the statement by dropping its connection. It does not undo
// what the server already took: ClickHouse 18.16 stores the blocks it
// received when the client leaves (the block still in the client is lost),
// so an aborted Insert is possibly, partly written. It is a no-op after
// Commit, so it can be deferred.
func (in *Insert[R]) Abort() {
	_ = in.batch.Abort() //nolint:errcheck // no-op after Send; the connection is released either way
}

// ByBytes splits rows into consecutive runs of at most limit bytes (size
// measures a row, Span.DataBytes or Content.DataBytes); a row larger than
// limit is a run of its own. The writer splits a flush into INSERTs with
// it, and an INSERT is sent in blocks split by it.
func ByBytes[R any](rows []R, size func(*R) int64, limit int64) iter.Seq[[]R] {
	return func(yield func([]R) bool) {
		start, n := 0, int64(0)
		for i := range rows {
			b := size(&rows[i])
			if i > start && n+b > limit {
				if !yield(rows[start:i]) {
					return
				}
				start, n = i, 0
			}
			n += b
		}
		if start < len(rows) {
			yield(rows[start:])
		}
	}
}

// appendBlock appends rows to the batch's columns.
func appendBlock[R any](batch driver.Batch, cols []column[R], rows []R) error {
	for i, c := range cols {
		var err error
		if c.appendRows != nil {
			err = c.appendRows(batch.Column(i), rows)
		} else {
			err = batch.Column(i).Append(c.extract(rows))
		}
		if err != nil {
			return fmt.Errorf("column %s: %w", c.name, err)
		}
	}
	return nil
}

// EngineMemory is what the store's engine tracks as its memory in use
// (system.metrics MemoryTracking) and its cap (max_server_memory_usage, 0
// when the engine has none), for the embedded store's metrics: in tally's
// process it is part of tally's RSS.
func (s *Store) EngineMemory(ctx context.Context) (used, limit int64, err error) {
	err = s.conn.QueryRow(ctx, "SELECT (SELECT toInt64(value) FROM system.metrics WHERE metric = 'MemoryTracking'), "+
		"(SELECT toInt64OrZero(value) FROM system.server_settings WHERE name = 'max_server_memory_usage')").Scan(&used, &limit)
	if err != nil {
		return 0, 0, fmt.Errorf("engine memory: %w", err)
	}
	return used, limit, nil
}

// engineCaches are the engine's caches EngineCaches reports: system.metrics'
// name of each one's bytes, and the name tally gives it.
var engineCaches = map[string]string{
	"MarkCacheBytes":               "mark",
	"PrimaryIndexCacheBytes":       "primary_index",
	"IndexMarkCacheBytes":          "index_mark",
	"UncompressedCacheBytes":       "uncompressed",
	"IndexUncompressedCacheBytes":  "index_uncompressed",
	"CompiledExpressionCacheBytes": "compiled_expression",
	"QueryConditionCacheBytes":     "query_condition",
	"QueryCacheBytes":              "query",
	"TextIndexTokensCacheBytes":    "text_index_tokens",
	"TextIndexHeaderCacheBytes":    "text_index_header",
	"TextIndexPostingsCacheBytes":  "text_index_postings",
	"PageCacheBytes":               "page",
}

// EngineCaches is the memory each of the engine's caches holds now, by
// cache (mark, primary_index, text_index_postings, ...): part of what
// EngineMemory reports in use, kept until the cache's own size bound
// evicts it, so on the embedded store a cache sized past its share of the
// memory budget is memory tally's statements cannot have. A cache this
// engine does not have is left out.
func (s *Store) EngineCaches(ctx context.Context) (map[string]int64, error) {
	names := make([]string, 0, len(engineCaches))
	for metric := range engineCaches {
		names = append(names, "'"+metric+"'") // constants of this file
	}
	rows, err := s.conn.Query(ctx, "SELECT metric, toInt64(value) FROM system.metrics WHERE metric IN ("+strings.Join(names, ", ")+")")
	if err != nil {
		return nil, fmt.Errorf("engine caches: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var metric string
		var v int64
		if err := rows.Scan(&metric, &v); err != nil {
			return nil, fmt.Errorf("engine caches: %w", err)
		}
		out[engineCaches[metric]] = v
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("engine caches: %w", err)
	}
	return out, nil
}

// EmbeddedSettings are the query settings tally's tables want from the
// embedded engine (ClickHouse 26.x), to open it with (chdb.Config.Settings):
//
//   - do_not_merge_across_partitions_select_final: FINAL collapses rows
//     within each partition only, not across them. Right for tally's
//     tables because every row that replaces another lands in its
//     partition: spans, content and span_facts are partitioned by the day
//     of the span's start, rollups by the month of their hour, both part
//     of what identifies the row (outcomes, whose run_start could move,
//     are read deduplicated by their identity besides). It halves a run
//     read on the engine (23 → 12 ms for a 500-span run in the engine).
func EmbeddedSettings() map[string]string {
	return map[string]string{"do_not_merge_across_partitions_select_final": "1"}
}
