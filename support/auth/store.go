package auth

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tallyhq/tally/schema"
)

// ErrNoSuchKey is returned when revoking a key id that does not exist.
var ErrNoSuchKey = errors.New("no such key")

// Store keeps managed keys in ClickHouse (table schema.TableAPIKeys), so that
// every tally replica sees the same keys. It is the only code that reads or
// writes that table.
//
// The table also records signed-out UI sessions, so that a sign-out on one
// replica is honoured by all (SessionRevocations): such a row has the id
// "session_<session id>", no scope and no hash, revoked_at the sign-out and
// created_at the time the session's token expires anyway. List never returns
// them.
type Store struct {
	store *schema.Store
	now   func() time.Time
}

// NewStore returns the key store of a migrated tally database.
func NewStore(s *schema.Store) *Store { return &Store{store: s, now: time.Now} }

const keyColumns = "id, project, scopes, name, hash, created_at, revoked_at, version"

// Create makes a new key for project with scopes, stores its hash and
// returns it with the plaintext key, which exists nowhere else: the caller
// shows it once.
func (s *Store) Create(ctx context.Context, project string, scopes []Scope, name string) (Key, string, error) {
	if err := ValidProject(project); err != nil {
		return Key{}, "", err
	}
	if len(scopes) == 0 {
		return Key{}, "", errors.New("create key: no scope")
	}
	plaintext, err := Generate(project)
	if err != nil {
		return Key{}, "", err
	}
	id, err := newID()
	if err != nil {
		return Key{}, "", err
	}
	now := s.now().UTC().Truncate(time.Second)
	k := Key{ID: id, Project: project, Scopes: scopes, Name: name, Hash: Hash(plaintext),
		CreatedAt: now, version: uint64(s.now().UnixNano())}
	if err := s.insert(ctx, k); err != nil {
		return Key{}, "", err
	}
	return k, plaintext, nil
}

// Revoke marks key id revoked. Servers stop accepting it at their next
// refresh of the key cache. Revoking a revoked key keeps its first
// revocation time.
func (s *Store) Revoke(ctx context.Context, id string) (Key, error) {
	keys, err := s.List(ctx)
	if err != nil {
		return Key{}, err
	}
	for _, k := range keys {
		if k.ID != id {
			continue
		}
		if k.Revoked() {
			return k, nil
		}
		k.RevokedAt = s.now().UTC().Truncate(time.Second)
		k.version = max(uint64(s.now().UnixNano()), k.version+1)
		if err := s.insert(ctx, k); err != nil {
			return Key{}, err
		}
		return k, nil
	}
	return Key{}, fmt.Errorf("revoke %s: %w", id, ErrNoSuchKey)
}

// List returns every managed key, revoked ones included, oldest first.
func (s *Store) List(ctx context.Context) ([]Key, error) {
	table := s.store.Table(schema.TableAPIKeys)
	rows, err := s.store.Conn().Query(ctx, "SELECT "+keyColumns+" FROM "+table)
	if err != nil {
		return nil, fmt.Errorf("read api keys: %w", err)
	}
	defer rows.Close()
	// Several rows of one id may be present until ClickHouse merges them:
	// the highest version is the key's state.
	latest := map[string]Key{}
	for rows.Next() {
		var (
			k         Key
			scopes    []string
			revokedAt time.Time
		)
		if err := rows.Scan(&k.ID, &k.Project, &scopes, &k.Name, &k.Hash, &k.CreatedAt, &revokedAt, &k.version); err != nil {
			return nil, fmt.Errorf("scan api key: %w", err)
		}
		for _, sc := range scopes {
			k.Scopes = append(k.Scopes, Scope(sc))
		}
		k.CreatedAt = k.CreatedAt.UTC()
		if revokedAt.Unix() > 0 {
			k.RevokedAt = revokedAt.UTC()
		}
		if strings.HasPrefix(k.ID, sessionRowPrefix) {
			continue
		}
		if prev, ok := latest[k.ID]; !ok || k.version > prev.version {
			latest[k.ID] = k
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read api keys: %w", err)
	}
	out := make([]Key, 0, len(latest))
	for _, k := range latest {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// insert writes one row through a batch: on ClickHouse 18.16 an INSERT …
// VALUES sent through Exec never completes over the native protocol.
func (s *Store) insert(ctx context.Context, k Key) error {
	table := s.store.Table(schema.TableAPIKeys)
	batch, err := s.store.Conn().PrepareBatch(ctx, "INSERT INTO "+table+" ("+keyColumns+")")
	if err != nil {
		return fmt.Errorf("write api key %s: %w", k.ID, err)
	}
	defer batch.Abort() //nolint:errcheck // no-op after Send
	scopes := make([]string, len(k.Scopes))
	for i, sc := range k.Scopes {
		scopes[i] = string(sc)
	}
	revokedAt := time.Unix(0, 0).UTC()
	if k.Revoked() {
		revokedAt = k.RevokedAt
	}
	if err := batch.Append(k.ID, k.Project, scopes, k.Name, k.Hash, k.CreatedAt, revokedAt, k.version); err != nil {
		return fmt.Errorf("write api key %s: %w", k.ID, err)
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("write api key %s: %w", k.ID, err)
	}
	return nil
}

// sessionRowPrefix starts the id of a signed-out session's row.
const sessionRowPrefix = "session_"

// RevokeSession records that UI session id is signed out, until expires.
func (s *Store) RevokeSession(ctx context.Context, id string, expires time.Time) error {
	now := s.now().UTC().Truncate(time.Second)
	return s.insert(ctx, Key{ID: sessionRowPrefix + id, Name: "signed-out session", CreatedAt: expires.UTC(),
		RevokedAt: now, version: uint64(s.now().UnixNano())})
}

// RevokedSessions lists the signed-out UI sessions whose tokens have not
// expired: session id → expiry.
func (s *Store) RevokedSessions(ctx context.Context) (map[string]time.Time, error) {
	table := s.store.Table(schema.TableAPIKeys)
	rows, err := s.store.Conn().Query(ctx, "SELECT id, created_at FROM "+table+
		" WHERE id LIKE '"+sessionRowPrefix+"%' AND created_at > now()")
	if err != nil {
		return nil, fmt.Errorf("read signed-out sessions: %w", err)
	}
	defer rows.Close()
	out := map[string]time.Time{}
	for rows.Next() {
		var (
			id      string
			expires time.Time
		)
		if err := rows.Scan(&id, &expires); err != nil {
			return nil, fmt.Errorf("scan signed-out session: %w", err)
		}
		if sid, ok := strings.CutPrefix(id, sessionRowPrefix); ok {
			out[sid] = expires.UTC()
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read signed-out sessions: %w", err)
	}
	return out, nil
}
