// Package tallytest starts a whole tally in-process for integration tests:
// a private database on the test ClickHouse server, the schema, and a
// server listening on a free 127.0.0.1 port, all torn down with the test.
package tallytest

import (
	"context"
	"net"
	"testing"

	"github.com/tallyhq/tally/internal/testenv"
	"github.com/tallyhq/tally/pricing"
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

// Option adjusts the server's options before it starts.
type Option func(*server.Options)

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
	catalog, err := pricing.Builtin()
	if err != nil {
		t.Fatalf("price catalog: %v", err)
	}
	o := server.Options{Store: store}
	o.Normalize.Pricer = catalog
	o.Catalog = catalog
	o.Writer.FlushInterval = 20e6 // 20ms: tests wait on acknowledgements
	for _, opt := range opts {
		opt(&o)
	}
	srv, err := server.New(o)
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
	return &Instance{URL: "http://" + ln.Addr().String(), Store: store, Server: srv, DB: db}
}
