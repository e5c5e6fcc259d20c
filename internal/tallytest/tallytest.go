// Package tallytest starts a whole tally in-process for integration tests:
// a private database on the test ClickHouse server, the schema, and a
// server listening on a free 127.0.0.1 port, all torn down with the test.
package tallytest

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/tallyhq/tally/api"
	"github.com/tallyhq/tally/ingest/deadletter"
	"github.com/tallyhq/tally/ingest/durable"
	"github.com/tallyhq/tally/ingest/writer"
	"github.com/tallyhq/tally/internal/testenv"
	"github.com/tallyhq/tally/keyindex"
	"github.com/tallyhq/tally/pricing"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/rollup"
	"github.com/tallyhq/tally/schema"
	"github.com/tallyhq/tally/server"
)

// Instance is a running in-process tally.
type Instance struct {
	URL    string // http://127.0.0.1:port
	Store  *schema.Store
	Server *server.Server
	// DB is the test's database and the store it is on.
	DB testenv.Database
}

// Config is what a test may change before tally starts: the parts
// Start builds (as cmd/tally/assemble.go does, over one test database)
// and the HTTP layer's options.
type Config struct {
	// Store is the test's store (set by Start; options read it).
	Store *schema.Store
	// Reader serves every API read; nil: query.NewReader(Store).
	Reader *query.Reader
	// API is the API's options; its readers left nil are filled from
	// Reader (costs from a cost reader over the built-in prices).
	API api.Options
	// Writer configures the writer (FlushInterval 20ms unless set).
	Writer writer.Config
	// Durable, when set, puts a durable log in front of the writer.
	Durable *Durable
	// Server is the HTTP layer's options (Auth, AllowedHosts, HTTP, UI,
	// WriteGuard, Jobs…); Start sets its parts.
	Server server.Options
}

// Durable is where a test's durable log lives and how it behaves.
type Durable struct {
	Dir    string
	Config durable.Config
	// Stream has the drain stream into held-open INSERTs (server store only).
	Stream bool
	// DeadLetterDir, when set, takes records the store refuses for good.
	DeadLetterDir string
}

// Option adjusts the configuration before tally starts.
type Option func(*Config)

// Start runs tally against a fresh database. Stopped on test cleanup.
func Start(t testing.TB, opts ...Option) *Instance {
	t.Helper()
	db := testenv.NewStoreDatabase(t)
	ctx := context.Background()
	store, err := schema.Open(ctx, db.StoreConfig())
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { store.Close() })
	if err := store.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	in := StartOn(t, store, opts...)
	in.DB = db
	return in
}

// StartOn runs tally over store, migrated by the caller. Stopped on test
// cleanup.
func StartOn(t testing.TB, store *schema.Store, opts ...Option) *Instance {
	t.Helper()
	ctx := context.Background()
	catalog, err := pricing.Builtin()
	if err != nil {
		t.Fatalf("price catalog: %v", err)
	}
	c := Config{Store: store}
	c.Writer.FlushInterval = 20 * time.Millisecond // tests wait on acknowledgements
	for _, opt := range opts {
		opt(&c)
	}
	srv, err := assemble(c, catalog)
	if err != nil {
		t.Fatalf("server: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(runCtx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return &Instance{URL: "http://" + ln.Addr().String(), Store: store, Server: srv}
}

// assemble builds the parts cmd/tally's assemble builds, from c: the
// writer (and durable log), the readers, the rollup, the API, and the
// server over them.
func assemble(c Config, catalog *pricing.Catalog) (*server.Server, error) {
	store := c.Store
	o := c.Server
	o.Normalize.Pricer = catalog
	if o.Registry == nil {
		o.Registry = server.NewRegistry()
	}
	w := writer.New(store, c.Writer, o.Logger)
	if err := w.Register(o.Registry); err != nil {
		return nil, err
	}
	o.Jobs = append(o.Jobs, w.Run)
	o.Ingest = w
	o.Checks = map[string]server.ReadinessCheck{"clickhouse": store.Ping, "schema": store.Migrated}
	if d := c.Durable; d != nil {
		dc := d.Config
		dc.MaxBatchSpans, dc.MaxBatchBytes = w.MaxBatchSpans(), w.MaxBatchBytes()
		if d.Stream && !store.Embedded() {
			var err error
			if dc, err = dc.Streaming(func(ctx context.Context) (durable.Stream, error) { return w.Begin(ctx) },
				w.InsertTimeout(), 0); err != nil {
				return nil, err
			}
		}
		if d.DeadLetterDir != "" {
			letters, err := deadletter.Open(d.DeadLetterDir)
			if err != nil {
				return nil, err
			}
			dc.DeadLetter, dc.Unstorable = letters, schema.Unstorable
		}
		sink, err := durable.Open(d.Dir, w, dc, o.Logger)
		if err != nil {
			return nil, err
		}
		if err := sink.Register(o.Registry); err != nil {
			return nil, err
		}
		o.Ingest, o.DeadLetters, o.Receiver.SinkCopies = sink, sink, true
		o.Jobs = append(o.Jobs, func(ctx context.Context) { _ = sink.Run(ctx); _ = sink.Close() })
		o.Checks["durable_log"] = func(context.Context) error { return sink.Ready() }
		o.Checks["durable_drain"] = func(context.Context) error { return sink.Draining() }
		o.IngestChecks = append(o.IngestChecks, "durable_log")
	}
	reader := c.Reader
	if reader == nil {
		reader = query.NewReader(store)
	}
	a := c.API
	fill[api.RunLister](&a.Runs, reader.RunReader)
	fill[api.Costs](&a.Costs, query.NewCostReader(reader, catalog))
	fill[api.TreeReader](&a.Trees, reader.TreeReader)
	fill[api.TraceResolver](&a.Traces, reader.RunReader)
	fill[api.ContentReader](&a.Content, reader.ContentReader)
	fill[api.ChatReader](&a.Chat, reader.ContentReader)
	fill[api.Conversations](&a.Conversations, reader.RunReader)
	fill[api.ToolStatsReader](&a.Tools, reader.ToolReader)
	fill[api.SignalReader](&a.Signals, reader.ReviewReader)
	fill[api.CapsReader](&a.Caps, reader.ReviewReader)
	fill[api.Outcomes](&a.Outcomes, reader.OutcomeReader)
	fill[api.Fixtures](&a.Fixtures, reader.FixtureReader)
	fill[api.Searcher](&a.Search, reader.SearchReader)
	fill[api.SavedQueryStore](&a.Saved, api.SavedQueries{SearchReader: reader.SearchReader, Store: store})
	fill[api.OutcomeStore](&a.OutcomeStore, store)
	fill[api.Explainer](&a.Explain, query.NewExplainer(reader, o.Normalize))
	o.Jobs = append(o.Jobs, rollup.New(store, rollup.Config{}).Run, keyindex.New(store, keyindex.Config{}).Run)
	o.API = api.New(a)
	return server.New(o)
}

// fill sets *dst to v unless a test set it.
func fill[T comparable](dst *T, v T) {
	var zero T
	if *dst == zero {
		*dst = v
	}
}
