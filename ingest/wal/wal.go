// Package wal is tally's durable log: an append-only, segmented, checksummed
// log of opaque records on local disk, in the manner of Prometheus's
// tsdb/wlog and pebble's WAL.
//
// # Format
//
// The log is a directory of segment files, each named by the sequence number
// of its first record (00000000000000000001.seg), and a checkpoint file.
// Sequence numbers start at 1 and have no gaps. A record is framed as
//
//	length  uint32 little-endian  (bytes of data)
//	crc     uint32 little-endian  (CRC-32C of the 4 length bytes, then data)
//	data    length bytes
//
// A segment is closed (fsynced) and a new one started when the next frame
// would take it past Options.SegmentBytes; a record larger than that gets a
// segment of its own.
//
// # Durability
//
// Append returns only after its record is written and fsynced. Concurrent
// appenders share fsyncs (group commit): one committer goroutine takes every
// record queued since its last round, writes them with as few write calls
// as it can, fsyncs once and then releases all their callers. A write or
// fsync error fails the log for good (the state of the file's pages is no
// longer known; see "fsyncgate"): every later Append returns the error and
// the log must be reopened, which re-verifies the files.
//
// Truncate records, durably, that records up to a sequence number are
// consumed (temporary file, fsync, rename, fsync of the directory) and then
// deletes the segments that hold nothing else.
//
// # Recovery
//
// Open verifies every frame of every segment that holds unconsumed records
// (so it reads up to MaxBytes at start-up; fully consumed segments are
// deleted unread). Because each commit fsyncs before it is acknowledged, and
// an fsync covers all earlier bytes of the file, a crash can only leave
// unacknowledged bytes after the last good frame of the last segment. So the
// first bad frame of the last segment (short, or failing its checksum) ends
// the log: the file is truncated there and the number of bytes dropped is
// logged. A bad frame in any older segment, a segment holding the wrong
// number of records, or a missing segment means acknowledged data was
// damaged after the fact; Open reports it as a
// *CorruptError (errors.Is(err, ErrCorrupt)) and does not guess.
//
// The size cap (Options.MaxBytes) counts the framed bytes of records not yet
// consumed plus those queued for commit; an Append that would take the log
// past it fails with ErrFull. Files on disk may exceed Size by the consumed
// prefix of the oldest remaining segment (under one segment).
package wal

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Defaults for Options fields left zero.
const (
	DefaultSegmentBytes = 64 << 20
	DefaultMaxBytes     = 1 << 30
)

// headerBytes is the size of a frame header: length and CRC, 4 bytes each.
const headerBytes = 8

// maxRecordBytes bounds one record's data so its length fits the header and
// a damaged length cannot ask for an absurd allocation.
const maxRecordBytes = 1<<31 - 1

// writeChunk is how many framed bytes the committer gathers before a write
// call.
const writeChunk = 1 << 20

const (
	segmentSuffix  = ".seg"
	checkpointName = "checkpoint"
	checkpointTmp  = "checkpoint.tmp"
	checkpointLen  = 16          // seq uint64, crc uint32 of seq, magic uint32
	checkpointMark = 0x7461_6c79 // "taly", marks a checkpoint file
)

// castagnoli is the CRC-32C table (hardware accelerated on amd64 and arm64).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Errors returned by the log.
var (
	// ErrFull is returned by Append when the record would take the log past
	// Options.MaxBytes. Nothing was written; retry after records are consumed.
	ErrFull = errors.New("wal: log is full")
	// ErrTooLarge is returned by Append for a record that could never fit:
	// larger than MaxBytes, or than the frame format allows.
	ErrTooLarge = errors.New("wal: record too large")
	// ErrClosed is returned by operations on a closed log.
	ErrClosed = errors.New("wal: log closed")
	// ErrCorrupt is matched (errors.Is) by every *CorruptError.
	ErrCorrupt = errors.New("wal: corrupt log")
)

// CorruptError reports damaged acknowledged data: a bad frame before the
// tail, a segment with the wrong number of records, or a gap.
type CorruptError struct {
	Path   string // segment or checkpoint file
	Offset int64  // byte offset of the bad frame in Path, -1 when not about a frame
	Reason string
}

func (e *CorruptError) Error() string {
	if e.Offset < 0 {
		return fmt.Sprintf("wal: corrupt log: %s: %s", e.Path, e.Reason)
	}
	return fmt.Sprintf("wal: corrupt log: %s at offset %d: %s", e.Path, e.Offset, e.Reason)
}

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// Options configure a log. Zero fields take the defaults.
type Options struct {
	// SegmentBytes is the size at which a segment is closed and a new one
	// started. Default DefaultSegmentBytes (64 MiB).
	SegmentBytes int64
	// MaxBytes caps the framed bytes of unconsumed records; past it Append
	// fails with ErrFull. Default DefaultMaxBytes (1 GiB).
	MaxBytes int64
	// NoSync skips every fsync. UNSAFE: an acknowledged record can be lost
	// in a crash of the machine. For benchmarks and tests only.
	NoSync bool
	// Logger receives recovery notices (torn tails). Default: discard.
	Logger *slog.Logger
}

// segment is one file of the log.
type segment struct {
	first uint64 // sequence number of its first record
	path  string
	bytes int64 // bytes on disk (committed frames)
}

// appendReq is one record waiting for the committer.
type appendReq struct {
	rec  []byte
	crc  uint32
	seq  uint64
	done chan error
}

// cursor is the end of the last consumed record: used to count the bytes
// that Truncate frees without re-reading whole segments.
type cursor struct {
	seq    uint64 // last consumed record (the checkpoint)
	first  uint64 // first sequence number of the segment the cursor is in
	offset int64  // byte offset just past record seq in that segment
}

// Log is an open write-ahead log. Its methods are safe for concurrent use.
type Log struct {
	dir  string
	opts Options
	log  *slog.Logger

	mu         sync.Mutex
	segments   []segment // ordered by first; the last one is active
	queue      []*appendReq
	nextSeq    uint64 // assigned to the next appended record
	lastSeq    uint64 // last committed (durable) record; 0 when none
	checkpoint uint64 // last consumed record
	size       int64  // framed bytes of unconsumed records, committed or queued
	failed     error  // sticky write/fsync failure
	closed     bool
	committed  chan struct{} // closed and replaced at every commit

	wake    chan struct{} // nudges the committer; capacity 1
	quit    chan struct{} // closed by Close
	stopped chan struct{} // closed when the committer exits
	active  *os.File      // owned by the committer after Open

	truncMu sync.Mutex // serializes Truncate
	cur     cursor     // guarded by truncMu

	syncs atomic.Uint64 // fsyncs of segment files, for benchmarks
}

// Open opens or creates the log in dir, recovering from a torn tail.
func Open(dir string, opts Options) (*Log, error) {
	if opts.SegmentBytes <= 0 {
		opts.SegmentBytes = DefaultSegmentBytes
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("wal: create directory: %w", err)
	}
	l := &Log{
		dir:       dir,
		opts:      opts,
		log:       opts.Logger,
		committed: make(chan struct{}),
		wake:      make(chan struct{}, 1),
		quit:      make(chan struct{}),
		stopped:   make(chan struct{}),
	}
	if err := l.recover(); err != nil {
		if l.active != nil {
			l.active.Close()
		}
		return nil, err
	}
	go l.commitLoop()
	return l, nil
}

// recover loads the checkpoint and segments, verifies them, truncates a torn
// tail, deletes consumed segments and opens the active segment for appends.
func (l *Log) recover() error {
	_ = os.Remove(filepath.Join(l.dir, checkpointTmp))
	ckpt, err := readCheckpoint(filepath.Join(l.dir, checkpointName))
	if err != nil {
		return err
	}
	l.checkpoint = ckpt
	segs, err := listSegments(l.dir)
	if err != nil {
		return err
	}
	if len(segs) == 0 {
		s, err := l.createSegment(ckpt + 1)
		if err != nil {
			return err
		}
		segs = append(segs, s)
	}
	if segs[0].first > ckpt+1 {
		return &CorruptError{Path: segs[0].path, Offset: -1, Reason: fmt.Sprintf(
			"oldest segment starts at record %d but records after %d were not consumed", segs[0].first, ckpt)}
	}
	// Segments whose records are all consumed need no verification.
	for len(segs) > 1 && segs[1].first-1 <= ckpt {
		if err := os.Remove(segs[0].path); err != nil {
			return fmt.Errorf("wal: remove consumed segment: %w", err)
		}
		segs = segs[1:]
	}
	l.cur = cursor{seq: ckpt, first: segs[0].first}
	var records uint64
	for i := range segs {
		s := &segs[i]
		last := i == len(segs)-1
		res, err := scanSegment(s.path, s.first, ckpt)
		if err != nil {
			return err
		}
		if res.bad != "" {
			if !last {
				return &CorruptError{Path: s.path, Offset: res.good, Reason: res.bad}
			}
			dropped := res.fileBytes - res.good
			l.log.Warn("wal: truncating torn tail of last segment",
				"segment", s.path, "offset", res.good, "bytes_dropped", dropped, "reason", res.bad)
			if err := truncateFile(s.path, res.good, l.opts.NoSync); err != nil {
				return err
			}
		}
		if !last && s.first+res.records != segs[i+1].first {
			return &CorruptError{Path: s.path, Offset: -1, Reason: fmt.Sprintf(
				"holds %d records but the next segment starts at record %d", res.records, segs[i+1].first)}
		}
		s.bytes = res.good
		l.size += res.unconsumedBytes
		if res.ckptOffset >= 0 {
			l.cur = cursor{seq: ckpt, first: s.first, offset: res.ckptOffset}
		}
		records = s.first + res.records - 1
	}
	l.lastSeq = records
	if ckpt > l.lastSeq {
		return &CorruptError{Path: filepath.Join(l.dir, checkpointName), Offset: -1, Reason: fmt.Sprintf(
			"checkpoint %d is past the last record %d", ckpt, l.lastSeq)}
	}
	l.nextSeq = l.lastSeq + 1
	l.segments = segs
	tail := segs[len(segs)-1]
	f, err := os.OpenFile(tail.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("wal: open active segment: %w", err)
	}
	l.active = f
	return nil
}

// Append writes rec to the log and returns its sequence number once it is
// durable (fsynced, shared with concurrent appenders). rec may be reused
// after Append returns. When ctx ends first Append returns ctx's error; the
// record may still be committed, as an unacknowledged record.
func (l *Log) Append(ctx context.Context, rec []byte) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("wal: append: %w", err)
	}
	frame := int64(headerBytes + len(rec))
	if len(rec) > maxRecordBytes || frame > l.opts.MaxBytes {
		return 0, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(rec), min(l.opts.MaxBytes-headerBytes, maxRecordBytes))
	}
	r := &appendReq{rec: rec, crc: frameCRC(rec), done: make(chan error, 1)}
	l.mu.Lock()
	switch {
	case l.closed:
		l.mu.Unlock()
		return 0, ErrClosed
	case l.failed != nil:
		err := l.failed
		l.mu.Unlock()
		return 0, err
	case l.size+frame > l.opts.MaxBytes:
		size := l.size
		l.mu.Unlock()
		return 0, fmt.Errorf("%w: %d bytes unconsumed, %d more would pass the limit of %d", ErrFull, size, frame, l.opts.MaxBytes)
	}
	l.size += frame
	r.seq = l.nextSeq
	l.nextSeq++
	l.queue = append(l.queue, r)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	select {
	case err := <-r.done:
		if err != nil {
			return 0, err
		}
		return r.seq, nil
	case <-ctx.Done():
		return 0, fmt.Errorf("wal: append: %w", ctx.Err())
	}
}

// commitLoop is the committer: it writes and fsyncs queued records in
// rounds until the log is closed, then commits what is left and exits.
func (l *Log) commitLoop() {
	defer close(l.stopped)
	var buf []byte
	for {
		select {
		case <-l.wake:
		case <-l.quit:
			l.commitQueued(&buf)
			return
		}
		l.commitQueued(&buf)
	}
}

// commitQueued takes everything queued and commits it as one round.
func (l *Log) commitQueued(buf *[]byte) {
	l.mu.Lock()
	batch := l.queue
	l.queue = nil
	failed := l.failed
	l.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	err := failed
	if err == nil {
		err = l.commit(batch, buf)
	}
	var frames int64
	for _, r := range batch {
		frames += int64(headerBytes + len(r.rec))
	}
	l.mu.Lock()
	if err != nil {
		if l.failed == nil {
			l.failed = fmt.Errorf("wal: log failed, reopen it: %w", err)
		}
		err = l.failed
		l.size -= frames
	} else {
		l.lastSeq = batch[len(batch)-1].seq
		close(l.committed)
		l.committed = make(chan struct{})
	}
	l.mu.Unlock()
	for _, r := range batch {
		r.done <- err
		r.rec = nil
	}
}

// commit writes the frames of batch to the active segment, rolling over to
// new segments as they fill, and fsyncs. Only the committer calls it.
func (l *Log) commit(batch []*appendReq, bufp *[]byte) error {
	l.mu.Lock()
	activeBytes := l.segments[len(l.segments)-1].bytes
	l.mu.Unlock()
	buf := (*bufp)[:0]
	defer func() { *bufp = buf[:0] }()
	written := int64(0) // bytes written to the active segment this round
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		n, err := l.active.Write(buf)
		written += int64(n)
		buf = buf[:0]
		if err != nil {
			return fmt.Errorf("wal: write segment: %w", err)
		}
		return nil
	}
	publish := func() {
		l.mu.Lock()
		l.segments[len(l.segments)-1].bytes += written
		l.mu.Unlock()
		activeBytes += written
		written = 0
	}
	for _, r := range batch {
		frame := int64(headerBytes + len(r.rec))
		if pending := activeBytes + written + int64(len(buf)); pending > 0 && pending+frame > l.opts.SegmentBytes {
			err := flush()
			publish()
			if err != nil {
				return err
			}
			if err := l.roll(r.seq); err != nil {
				return err
			}
			activeBytes = 0
		}
		buf = binary.LittleEndian.AppendUint32(buf, uint32(len(r.rec)))
		buf = binary.LittleEndian.AppendUint32(buf, r.crc)
		if len(buf)+len(r.rec) > writeChunk {
			// Large record: write it straight from the caller's slice.
			if err := flush(); err != nil {
				publish()
				return err
			}
			n, err := l.active.Write(r.rec)
			written += int64(n)
			if err != nil {
				publish()
				return fmt.Errorf("wal: write segment: %w", err)
			}
			continue
		}
		buf = append(buf, r.rec...)
	}
	err := flush()
	publish()
	if err != nil {
		return err
	}
	return l.sync(l.active)
}

// roll closes the active segment (fsynced) and starts one whose first record
// is first.
func (l *Log) roll(first uint64) error {
	if err := l.sync(l.active); err != nil {
		return err
	}
	if err := l.active.Close(); err != nil {
		return fmt.Errorf("wal: close segment: %w", err)
	}
	l.active = nil
	s, err := l.createSegment(first)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("wal: open new segment: %w", err)
	}
	l.active = f
	l.mu.Lock()
	l.segments = append(l.segments, s)
	l.mu.Unlock()
	return nil
}

// createSegment creates an empty segment file and makes its name durable.
func (l *Log) createSegment(first uint64) (segment, error) {
	path := filepath.Join(l.dir, segmentName(first))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o640)
	if err != nil {
		return segment{}, fmt.Errorf("wal: create segment: %w", err)
	}
	if err := f.Close(); err != nil {
		return segment{}, fmt.Errorf("wal: create segment: %w", err)
	}
	if err := l.syncDir(); err != nil {
		return segment{}, err
	}
	return segment{first: first, path: path}, nil
}

func (l *Log) sync(f *os.File) error {
	if l.opts.NoSync {
		return nil
	}
	l.syncs.Add(1)
	if err := f.Sync(); err != nil {
		return fmt.Errorf("wal: fsync segment: %w", err)
	}
	return nil
}

func (l *Log) syncDir() error {
	if l.opts.NoSync {
		return nil
	}
	return syncDir(l.dir)
}

// WaitFor blocks until record seq is committed (LastSeq() >= seq), ctx ends
// or the log is closed or failed.
func (l *Log) WaitFor(ctx context.Context, seq uint64) error {
	for {
		l.mu.Lock()
		last, ch, closed, failed := l.lastSeq, l.committed, l.closed, l.failed
		l.mu.Unlock()
		switch {
		case last >= seq:
			return nil
		case failed != nil:
			return failed
		case closed:
			return ErrClosed
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("wal: wait for record %d: %w", seq, ctx.Err())
		}
	}
}

// Truncate records durably that every record up to and including upto is
// consumed, then deletes the segments holding only consumed records. upto
// at or below the current checkpoint does nothing; past LastSeq is an error.
func (l *Log) Truncate(upto uint64) error {
	l.truncMu.Lock()
	defer l.truncMu.Unlock()
	l.mu.Lock()
	ckpt, last, closed := l.checkpoint, l.lastSeq, l.closed
	l.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if upto <= ckpt {
		return nil
	}
	if upto > last {
		return fmt.Errorf("wal: truncate to record %d: only %d records are committed", upto, last)
	}
	freed, err := l.advanceCursor(upto)
	if err != nil {
		return err
	}
	if err := writeCheckpoint(l.dir, upto, l.opts.NoSync); err != nil {
		return err
	}
	l.mu.Lock()
	l.checkpoint = upto
	l.size -= freed
	var remove []string
	for len(l.segments) > 1 && l.segments[1].first-1 <= upto {
		remove = append(remove, l.segments[0].path)
		l.segments = l.segments[1:]
	}
	l.mu.Unlock()
	for _, p := range remove {
		if err := os.Remove(p); err != nil {
			return fmt.Errorf("wal: remove consumed segment: %w", err)
		}
	}
	return nil
}

// advanceCursor moves the consumed cursor from the checkpoint to upto by
// reading frame headers, and returns the framed bytes passed over.
func (l *Log) advanceCursor(upto uint64) (int64, error) {
	var freed int64
	var f *os.File
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	var hdr [headerBytes]byte
	for l.cur.seq < upto {
		l.mu.Lock()
		i := findSegment(l.segments, l.cur.seq+1)
		s := l.segments[i]
		l.mu.Unlock()
		if s.first != l.cur.first || f == nil {
			if f != nil {
				f.Close()
			}
			var err error
			if f, err = os.Open(s.path); err != nil {
				return 0, fmt.Errorf("wal: truncate: %w", err)
			}
			if s.first != l.cur.first {
				l.cur.first, l.cur.offset = s.first, 0
			}
		}
		if _, err := f.ReadAt(hdr[:], l.cur.offset); err != nil {
			return 0, fmt.Errorf("wal: truncate: read record %d header in %s: %w", l.cur.seq+1, s.path, err)
		}
		frame := int64(headerBytes) + int64(binary.LittleEndian.Uint32(hdr[:4]))
		l.cur.offset += frame
		l.cur.seq++
		freed += frame
	}
	return freed, nil
}

// Checkpoint is the last consumed record (0 when none).
func (l *Log) Checkpoint() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.checkpoint
}

// FirstSeq is the oldest record not yet consumed; LastSeq()+1 when every
// record is consumed.
func (l *Log) FirstSeq() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.checkpoint + 1
}

// LastSeq is the newest committed record (0 when none was ever written).
func (l *Log) LastSeq() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastSeq
}

// Size is the framed bytes of records not yet consumed, including those
// queued for commit: the figure MaxBytes caps.
func (l *Log) Size() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.size
}

// MaxBytes is the cap on Size in effect.
func (l *Log) MaxBytes() int64 { return l.opts.MaxBytes }

// Err is the error that failed the log, or nil while it works.
func (l *Log) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failed
}

// Syncs counts segment fsyncs since Open (group commit makes it smaller
// than the number of appends).
func (l *Log) Syncs() uint64 { return l.syncs.Load() }

// Close commits what is queued, stops the committer and closes the active
// segment. Later calls return ErrClosed.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.closed = true
	close(l.committed) // wake WaitFor callers; they see closed
	l.committed = make(chan struct{})
	l.mu.Unlock()
	close(l.quit)
	<-l.stopped
	if l.active == nil { // a failed roll left no active segment
		return l.Err()
	}
	err := l.active.Close()
	l.active = nil
	if err != nil {
		return fmt.Errorf("wal: close segment: %w", err)
	}
	return l.Err()
}

// frameCRC is the CRC-32C of a record's length bytes followed by its data.
func frameCRC(rec []byte) uint32 {
	var n [4]byte
	binary.LittleEndian.PutUint32(n[:], uint32(len(rec)))
	return crc32.Update(crc32.Update(0, castagnoli, n[:]), castagnoli, rec)
}

func segmentName(first uint64) string { return fmt.Sprintf("%020d%s", first, segmentSuffix) }

// listSegments returns the segment files of dir ordered by first record.
func listSegments(dir string) ([]segment, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("wal: list segments: %w", err)
	}
	var segs []segment
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, segmentSuffix) {
			continue
		}
		first, err := strconv.ParseUint(strings.TrimSuffix(name, segmentSuffix), 10, 64)
		if err != nil || first == 0 {
			return nil, fmt.Errorf("wal: unexpected segment file name %q", name)
		}
		segs = append(segs, segment{first: first, path: filepath.Join(dir, name)})
	}
	slices.SortFunc(segs, func(a, b segment) int {
		switch {
		case a.first < b.first:
			return -1
		case a.first > b.first:
			return 1
		}
		return 0
	})
	return segs, nil
}

// findSegment is the index of the segment holding seq (the last one whose
// first record is at or below it), or 0.
func findSegment(segs []segment, seq uint64) int {
	i, _ := slices.BinarySearchFunc(segs, seq, func(s segment, seq uint64) int {
		switch {
		case s.first < seq:
			return -1
		case s.first > seq:
			return 1
		}
		return 0
	})
	if i < len(segs) && segs[i].first == seq {
		return i
	}
	return max(i-1, 0)
}

func truncateFile(path string, size int64, noSync bool) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("wal: open torn segment: %w", err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		return fmt.Errorf("wal: truncate torn segment: %w", err)
	}
	if !noSync {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("wal: fsync truncated segment: %w", err)
		}
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("wal: open directory for fsync: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("wal: fsync directory: %w", err)
	}
	return nil
}
