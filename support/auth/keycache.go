package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// KeyCache is a KeySource and SessionRevocations in front of the ones in
// ClickHouse that keeps the last answer in a file (key hashes, never keys):
// when ClickHouse cannot be reached — a tally started during an outage — it
// answers from the file, so the server authenticates as it did before the
// outage and can take spans into its durable log. Without a file yet, the
// underlying error stands.
type KeyCache struct {
	Source      KeySource
	Revocations SessionRevocations
	// Path is the cache file (written 0600, replaced atomically).
	Path   string
	Logger *slog.Logger

	mu   sync.Mutex
	last []byte // what was last written, without its time
}

// cachedKeys is the cache file's content.
type cachedKeys struct {
	Keys []cachedKey `json:"keys"`
	// Revoked are signed-out UI sessions: id → the token's expiry.
	Revoked map[string]time.Time `json:"revoked_sessions"`
	Saved   time.Time            `json:"saved"`
}

type cachedKey struct {
	Key
	Hash string `json:"hash"`
}

// List lists the managed keys from Source, or from the cache file when
// Source fails.
func (c *KeyCache) List(ctx context.Context) ([]Key, error) {
	keys, err := c.Source.List(ctx)
	if err == nil {
		c.update(func(f *cachedKeys) {
			f.Keys = f.Keys[:0]
			for _, k := range keys {
				f.Keys = append(f.Keys, cachedKey{Key: k, Hash: k.Hash})
			}
		})
		return keys, nil
	}
	f, cerr := c.load()
	if cerr != nil {
		return nil, err
	}
	c.logger().Warn("api keys: ClickHouse unavailable, using the keys cached at "+f.Saved.Format(time.RFC3339), "path", c.Path, "err", err)
	out := make([]Key, len(f.Keys))
	for i, k := range f.Keys {
		out[i] = k.Key
		out[i].Hash = k.Hash
	}
	return out, nil
}

// RevokeSession records a sign-out in Revocations (and the cache).
func (c *KeyCache) RevokeSession(ctx context.Context, id string, expires time.Time) error {
	c.update(func(f *cachedKeys) { f.Revoked[id] = expires })
	if c.Revocations == nil {
		return nil
	}
	return c.Revocations.RevokeSession(ctx, id, expires)
}

// RevokedSessions lists signed-out sessions from Revocations, or from the
// cache file when it fails.
func (c *KeyCache) RevokedSessions(ctx context.Context) (map[string]time.Time, error) {
	if c.Revocations == nil {
		return nil, nil
	}
	revoked, err := c.Revocations.RevokedSessions(ctx)
	if err == nil {
		c.update(func(f *cachedKeys) {
			for id, exp := range revoked {
				f.Revoked[id] = exp
			}
		})
		return revoked, nil
	}
	f, cerr := c.load()
	if cerr != nil {
		return nil, err
	}
	return f.Revoked, nil
}

func (c *KeyCache) logger() *slog.Logger {
	if c.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Logger
}

// load reads the cache file.
func (c *KeyCache) load() (cachedKeys, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.read()
}

func (c *KeyCache) read() (cachedKeys, error) {
	f := cachedKeys{Revoked: map[string]time.Time{}}
	b, err := os.ReadFile(c.Path)
	if err != nil {
		return f, err
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return f, fmt.Errorf("key cache %s: %w", c.Path, err)
	}
	if f.Revoked == nil {
		f.Revoked = map[string]time.Time{}
	}
	return f, nil
}

// update changes the cache file under the lock; a failure to write is
// logged, never fatal (the cache only helps during outages).
func (c *KeyCache) update(change func(*cachedKeys)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, err := c.read()
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		c.logger().Warn("api keys: unreadable cache, rewriting it", "path", c.Path, "err", err)
		f = cachedKeys{Revoked: map[string]time.Time{}}
	}
	change(&f)
	now := time.Now()
	for id, exp := range f.Revoked {
		if !now.Before(exp) {
			delete(f.Revoked, id)
		}
	}
	f.Saved = time.Time{}
	same, err := json.Marshal(f)
	if err == nil && string(same) == string(c.last) {
		return // unchanged: no write every refresh
	}
	f.Saved = now.UTC()
	b, err := json.Marshal(f)
	if err == nil {
		err = writeFileAtomic(c.Path, b)
	}
	if err == nil {
		c.last = same
	}
	if err != nil {
		c.logger().Warn("api keys: cannot write the cache", "path", c.Path, "err", err)
	}
}

// writeFileAtomic writes b to path through a temporary file and a rename.
func writeFileAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".keys-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
