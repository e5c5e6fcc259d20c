package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// Reader reads committed records in order, following the log as it grows
// and across segments. It checks every frame's CRC. A Reader is for one
// goroutine; several Readers may read one Log.
type Reader struct {
	l      *Log
	next   uint64 // sequence number of the record Next returns
	f      *os.File
	first  uint64 // first record of the segment f holds
	path   string
	offset int64 // of the next frame in f
	hdr    [headerBytes]byte
	buf    []byte
}

// NewReader returns a Reader whose first record is from. from must not be
// below the oldest record still on disk (FirstSeq is always safe).
func (l *Log) NewReader(from uint64) (*Reader, error) {
	l.mu.Lock()
	oldest := l.segments[0].first
	l.mu.Unlock()
	if from < oldest {
		return nil, fmt.Errorf("wal: read from record %d: records before %d were deleted", from, oldest)
	}
	return &Reader{l: l, next: from}, nil
}

// Next returns the next committed record and its sequence number. rec is
// valid until the following call. It returns io.EOF when every committed
// record has been read; call it again once more are (see Log.WaitFor).
func (r *Reader) Next() (seq uint64, rec []byte, err error) {
	r.l.mu.Lock()
	last := r.l.lastSeq
	s := r.l.segments[findSegment(r.l.segments, r.next)]
	r.l.mu.Unlock()
	if r.next > last {
		return 0, nil, io.EOF
	}
	if s.first > r.next {
		return 0, nil, fmt.Errorf("wal: read record %d: it was deleted", r.next)
	}
	if r.f == nil || s.first != r.first {
		if err := r.open(s); err != nil {
			return 0, nil, err
		}
	}
	rec, err = r.readFrame()
	if err != nil {
		return 0, nil, err
	}
	seq = r.next
	r.next++
	return seq, rec, nil
}

// open switches to segment s and skips the frames before r.next.
func (r *Reader) open(s segment) error {
	if r.f != nil {
		r.f.Close()
		r.f = nil
	}
	f, err := os.Open(s.path)
	if err != nil {
		return fmt.Errorf("wal: open segment for reading: %w", err)
	}
	r.f, r.first, r.path, r.offset = f, s.first, s.path, 0
	for seq := s.first; seq < r.next; seq++ {
		if _, err := r.f.ReadAt(r.hdr[:], r.offset); err != nil {
			return r.readErr(err, "frame header")
		}
		r.offset += headerBytes + int64(binary.LittleEndian.Uint32(r.hdr[:4]))
	}
	return nil
}

func (r *Reader) readFrame() ([]byte, error) {
	if _, err := r.f.ReadAt(r.hdr[:], r.offset); err != nil {
		return nil, r.readErr(err, "frame header")
	}
	n := binary.LittleEndian.Uint32(r.hdr[:4])
	if n > maxRecordBytes {
		return nil, &CorruptError{Path: r.path, Offset: r.offset, Reason: fmt.Sprintf("record length %d is impossible", n)}
	}
	if uint32(cap(r.buf)) < n {
		r.buf = make([]byte, n)
	}
	r.buf = r.buf[:n]
	if _, err := r.f.ReadAt(r.buf, r.offset+headerBytes); err != nil {
		return nil, r.readErr(err, "record")
	}
	if frameCRC(r.buf) != binary.LittleEndian.Uint32(r.hdr[4:]) {
		return nil, &CorruptError{Path: r.path, Offset: r.offset, Reason: fmt.Sprintf("record %d: checksum mismatch", r.next)}
	}
	r.offset += headerBytes + int64(n)
	return r.buf, nil
}

// readErr turns a short read of a committed record into a CorruptError.
func (r *Reader) readErr(err error, what string) error {
	if errors.Is(err, io.EOF) {
		return &CorruptError{Path: r.path, Offset: r.offset, Reason: fmt.Sprintf("record %d: %s cut short", r.next, what)}
	}
	return fmt.Errorf("wal: read %s: %w", r.path, err)
}

// NextSeq is the sequence number of the record Next returns next: wait for
// it with Log.WaitFor after Next returns io.EOF.
func (r *Reader) NextSeq() uint64 { return r.next }

// Close releases the Reader's file.
func (r *Reader) Close() error {
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}

// Replay calls fn for every committed record from from (clamped up to the
// oldest record on disk) to LastSeq as of the call, in order. It stops at
// the first error, fn's included, and returns it.
func (l *Log) Replay(from uint64, fn func(seq uint64, rec []byte) error) error {
	l.mu.Lock()
	from = max(from, l.segments[0].first)
	last := l.lastSeq
	l.mu.Unlock()
	r, err := l.NewReader(from)
	if err != nil {
		return err
	}
	defer r.Close()
	for {
		seq, rec, err := r.Next()
		if errors.Is(err, io.EOF) || (err == nil && seq > last) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(seq, rec); err != nil {
			return err
		}
	}
}
