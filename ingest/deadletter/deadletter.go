// Package deadletter keeps the durable log's records that the store
// refused for good, so that one of them never blocks the records behind it.
//
// The durable log's drain writes a record here, fsynced, only when the
// store has refused the record alone, for its own content, again and
// again (package durable decides when; see durable.Config.DeadLetter);
// only then does it move its checkpoint past the record. Nothing is
// dropped: an entry stays until an operator replays it into the log
// (tally deadletter replay, once the cause is fixed) or discards it.
//
// An entry is one file, <id>.dlq: a JSON header line (Entry) and the
// record's bytes as the log held them (package ingest/rowcodec), with
// their CRC-32C in the header. It is written to a temporary file, fsynced
// and renamed, and the directory fsynced, so an entry is whole or absent.
package deadletter

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// ErrNotFound is returned for an id with no entry.
var ErrNotFound = errors.New("dead-letter entry not found")

// Entry describes one dead-lettered record.
type Entry struct {
	ID string `json:"id"`
	// Seq is the record's sequence number in the durable log.
	Seq uint64 `json:"seq"`
	// At is when it was dead-lettered.
	At time.Time `json:"at"`
	// Error is the store's last answer to the record written alone.
	Error string `json:"error"`
	// Attempts is how many times the record alone was refused.
	Attempts int `json:"attempts"`
	// Spans and Contents count its rows; Projects name theirs.
	Spans    int      `json:"spans"`
	Contents int      `json:"contents"`
	Projects []string `json:"projects"`
	// Bytes is the record's size and CRC32C its checksum (Castagnoli).
	Bytes  int    `json:"bytes"`
	CRC32C uint32 `json:"crc32c"`
}

// idRE is what an entry id looks like: <seq>-<unix nanoseconds>.
var idRE = regexp.MustCompile(`^[0-9]{20}-[0-9]{1,20}$`)

const suffix = ".dlq"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Dir is a dead-letter directory. It is safe for concurrent use by one
// process; another process may read it at the same time.
type Dir struct {
	path string
	mu   sync.Mutex // one writer of entries at a time
}

// Open opens (creating) the dead-letter directory at path.
func Open(path string) (*Dir, error) {
	if err := os.MkdirAll(path, 0o750); err != nil {
		return nil, fmt.Errorf("dead-letter directory: %w", err)
	}
	return &Dir{path: path}, nil
}

// Path is the directory's path.
func (d *Dir) Path() string { return d.path }

// Put stores record under e (ID, At, Bytes and CRC32C are set here) and
// returns the entry as stored. It returns only once the entry is durable.
func (d *Dir) Put(e Entry, record []byte) (Entry, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e.At.IsZero() {
		e.At = time.Now().UTC()
	}
	e.ID = fmt.Sprintf("%020d-%d", e.Seq, e.At.UnixNano())
	e.Bytes, e.CRC32C = len(record), crc32.Checksum(record, castagnoli)
	slices.Sort(e.Projects)
	head, err := json.Marshal(e)
	if err != nil {
		return Entry{}, fmt.Errorf("dead-letter entry: %w", err)
	}
	tmp, err := os.CreateTemp(d.path, ".put-*")
	if err != nil {
		return Entry{}, fmt.Errorf("dead-letter entry: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename, a no-op
	w := bufio.NewWriter(tmp)
	w.Write(head)
	w.WriteByte('\n')
	w.Write(record)
	err = w.Flush()
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(d.path, e.ID+suffix))
	}
	if err == nil {
		err = syncDir(d.path)
	}
	if err != nil {
		return Entry{}, fmt.Errorf("dead-letter entry %s: %w", e.ID, err)
	}
	return e, nil
}

// List returns the entries, oldest record first.
func (d *Dir) List() ([]Entry, error) {
	names, err := d.ids()
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(names))
	for _, id := range names {
		e, _, err := d.read(id, false)
		if errors.Is(err, ErrNotFound) {
			continue // replayed or discarded meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// Count is the number of entries, for metrics.
func (d *Dir) Count() (int, error) {
	names, err := d.ids()
	return len(names), err
}

// Read returns entry id and its record, checked against its checksum.
func (d *Dir) Read(id string) (Entry, []byte, error) {
	return d.read(id, true)
}

// Remove deletes entry id (after a replay, or to discard it).
func (d *Dir) Remove(id string) error {
	if !idRE.MatchString(id) {
		return fmt.Errorf("dead-letter entry %q: %w", id, ErrNotFound)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	err := os.Remove(filepath.Join(d.path, id+suffix))
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("dead-letter entry %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("dead-letter entry %s: %w", id, err)
	}
	return syncDir(d.path)
}

// ids are the entries' ids, sorted (by record sequence, then time).
func (d *Dir) ids() ([]string, error) {
	entries, err := os.ReadDir(d.path)
	if err != nil {
		return nil, fmt.Errorf("dead-letter directory: %w", err)
	}
	var out []string
	for _, e := range entries {
		if id, ok := strings.CutSuffix(e.Name(), suffix); ok && idRE.MatchString(id) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out, nil
}

// maxHeader bounds an entry's header line (its longest part is the
// server's answer, which ClickHouse keeps under 16 KiB).
const maxHeader = 1 << 20

// read reads entry id: its header and, with body, its record. Without
// body only the header line is read, so listing entries of large records
// costs their headers alone.
func (d *Dir) read(id string, body bool) (Entry, []byte, error) {
	if !idRE.MatchString(id) {
		return Entry{}, nil, fmt.Errorf("dead-letter entry %q: %w", id, ErrNotFound)
	}
	f, err := os.Open(filepath.Join(d.path, id+suffix))
	if errors.Is(err, os.ErrNotExist) {
		return Entry{}, nil, fmt.Errorf("dead-letter entry %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Entry{}, nil, fmt.Errorf("dead-letter entry %s: %w", id, err)
	}
	defer f.Close()
	r := bufio.NewReader(io.LimitReader(f, maxHeader))
	head, err := r.ReadBytes('\n')
	var e Entry
	if err != nil || json.Unmarshal(head, &e) != nil {
		return Entry{}, nil, fmt.Errorf("dead-letter entry %s: damaged header", id)
	}
	if !body {
		return e, nil, nil
	}
	if _, err := f.Seek(int64(len(head)), io.SeekStart); err != nil {
		return Entry{}, nil, fmt.Errorf("dead-letter entry %s: %w", id, err)
	}
	rec, err := io.ReadAll(f)
	if err != nil {
		return Entry{}, nil, fmt.Errorf("dead-letter entry %s: %w", id, err)
	}
	if len(rec) != e.Bytes || crc32.Checksum(rec, castagnoli) != e.CRC32C {
		return Entry{}, nil, fmt.Errorf("dead-letter entry %s: record damaged (%d bytes, checksum mismatch)", id, len(rec))
	}
	return e, rec, nil
}

// syncDir fsyncs a directory, so a rename or removal in it is durable.
func syncDir(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
