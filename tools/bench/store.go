package bench

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/tallyhq/tally/schema"
	"github.com/tallyhq/tally/schema/chdb"
)

// Store kinds a pass of the suite measures.
const (
	storeServer   = "clickhouse"
	storeEmbedded = "embedded"
)

// target is where a pass of the suite keeps its data: the ClickHouse server
// at chAddr, or the embedded engine under dataDir, which every tally serve
// of the pass gets as --data-dir (the engine lives in its store/).
//
// chDB keeps one data path per process and the path belongs to one process
// at a time, so on the embedded store the suite opens the engine itself
// only between tally runs: open, then release before starting tally.
type target struct {
	kind    string
	chAddr  string
	dataDir string
	// prefix starts the figure IDs of this pass ("" on the server, the
	// suite's first pass, so that the IDs stay what they were).
	prefix string
	// lib is the libchdb.so the suite found, given to every tally serve
	// (which runs in its data directory, away from .tally/lib).
	lib    string
	engine *chdb.Engine
}

func serverTarget(addr string) *target { return &target{kind: storeServer, chAddr: addr} }

func embeddedTarget(dir string) (*target, error) {
	lib, err := chdb.FindLibrary("")
	if err != nil {
		return nil, err
	}
	return &target{kind: storeEmbedded, dataDir: dir, prefix: "embedded.", lib: lib}, nil
}

// id is a figure's ID in this pass.
func (tg *target) id(id string) string { return tg.prefix + id }

// name is a figure's name in this pass.
func (tg *target) name(name string) string {
	if tg.kind == storeEmbedded {
		return name + " (embedded store)"
	}
	return name
}

// open returns a migrated store over database db.
func (tg *target) open(ctx context.Context, db string) (*schema.Store, error) {
	cfg := schema.Config{Addr: tg.chAddr, Database: db}
	if tg.kind == storeEmbedded {
		if tg.engine == nil {
			e, err := chdb.Open(ctx, chdb.Config{Library: tg.lib, Path: filepath.Join(tg.dataDir, "store"), Settings: schema.EmbeddedSettings()})
			if err != nil {
				return nil, fmt.Errorf("embedded store: %w", err)
			}
			tg.engine = e
		}
		cfg = schema.Config{Addr: "embedded", Embedded: tg.engine.Transport(), Database: db}
	}
	store, err := schema.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := store.Migrate(ctx); err != nil {
		store.Close()
		return nil, err
	}
	return store, nil
}

// release closes the suite's own engine so that a tally serve can open the
// path; stores opened from it must be closed first. A no-op on a server.
func (tg *target) release() error {
	if tg.engine == nil {
		return nil
	}
	err := tg.engine.Close()
	tg.engine = nil
	if err != nil {
		return fmt.Errorf("close embedded store: %w", err)
	}
	return nil
}

// tallyArgs are tally serve's store flags for database db.
func (tg *target) tallyArgs(db string) []string {
	if tg.kind == storeEmbedded {
		return []string{"--store", "embedded", "--chdb-lib", tg.lib, "--clickhouse-database", db}
	}
	return []string{"--store", "clickhouse", "--clickhouse-addr", tg.chAddr, "--clickhouse-database", db}
}

// tallyDataDir is the --data-dir of a tally serve named name.
func (tg *target) tallyDataDir(workDir, name string) string {
	if tg.kind == storeEmbedded {
		return tg.dataDir
	}
	return filepath.Join(workDir, "tally-"+name)
}
