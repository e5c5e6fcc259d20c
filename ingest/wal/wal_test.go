package wal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// rec20 is a 20-byte record; its frame is 8+20 = 28 bytes.
func rec20(i int) []byte { return fmt.Appendf(nil, "record-%013d", i) }

const frame20 = 28

type entry struct {
	seq uint64
	rec string
}

func open(t *testing.T, dir string, opts Options) *Log {
	t.Helper()
	l, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func appendN(t *testing.T, l *Log, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		seq, err := l.Append(context.Background(), rec20(i))
		if err != nil {
			t.Fatalf("Append %d: %v", i, err)
		}
		if seq != uint64(i) {
			t.Fatalf("Append %d: seq %d, want %d", i, seq, i)
		}
	}
}

func replayAll(t *testing.T, l *Log, from uint64) []entry {
	t.Helper()
	var got []entry
	if err := l.Replay(from, func(seq uint64, rec []byte) error {
		got = append(got, entry{seq, string(rec)})
		return nil
	}); err != nil {
		t.Fatalf("Replay(%d): %v", from, err)
	}
	return got
}

// wantRange is records from..to as rec20 wrote them.
func wantRange(from, to int) []entry {
	var w []entry
	for i := from; i <= to; i++ {
		w = append(w, entry{uint64(i), string(rec20(i))})
	}
	return w
}

func segmentFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.seg"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range m {
		m[i] = filepath.Base(m[i])
	}
	slices.Sort(m)
	return m
}

func TestAppendReplayInOrder(t *testing.T) {
	l := open(t, t.TempDir(), Options{})
	appendN(t, l, 1, 100)
	if got := replayAll(t, l, 1); !slices.Equal(got, wantRange(1, 100)) {
		t.Fatalf("replay: got %d records %v…", len(got), got[:min(3, len(got))])
	}
	// Replay from the middle: records 40..100.
	if got := replayAll(t, l, 40); !slices.Equal(got, wantRange(40, 100)) {
		t.Fatalf("replay from 40: got %d records", len(got))
	}
	if l.FirstSeq() != 1 || l.LastSeq() != 100 {
		t.Fatalf("FirstSeq, LastSeq = %d, %d; want 1, 100", l.FirstSeq(), l.LastSeq())
	}
	// 100 frames of 28 bytes.
	if l.Size() != 2800 {
		t.Fatalf("Size = %d, want 2800", l.Size())
	}
}

func TestGroupCommitConcurrentAppends(t *testing.T) {
	const writers, each = 16, 50 // 800 records
	l := open(t, t.TempDir(), Options{})
	seqs := make([][]uint64, writers)
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range each {
				seq, err := l.Append(context.Background(), fmt.Appendf(nil, "g%02d-i%03d", g, i))
				if err != nil {
					t.Errorf("writer %d append %d: %v", g, i, err)
					return
				}
				seqs[g] = append(seqs[g], seq)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	seen := make(map[uint64]string)
	for g, ss := range seqs {
		if !slices.IsSorted(ss) {
			t.Errorf("writer %d: seqs not increasing: %v", g, ss)
		}
		for i, s := range ss {
			if prev, dup := seen[s]; dup {
				t.Fatalf("seq %d given twice (%s and g%02d-i%03d)", s, prev, g, i)
			}
			seen[s] = fmt.Sprintf("g%02d-i%03d", g, i)
		}
	}
	got := replayAll(t, l, 1)
	if len(got) != writers*each {
		t.Fatalf("replayed %d records, want %d", len(got), writers*each)
	}
	for i, e := range got {
		if e.seq != uint64(i+1) {
			t.Fatalf("replay position %d has seq %d", i, e.seq)
		}
		if seen[e.seq] != e.rec {
			t.Fatalf("seq %d holds %q, its appender wrote %q", e.seq, e.rec, seen[e.seq])
		}
	}
	if l.Syncs() > writers*each {
		t.Fatalf("%d fsyncs for %d appends", l.Syncs(), writers*each)
	}
}

func TestReopenContinues(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 1, 10)
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := l.Append(context.Background(), []byte("x")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close: %v, want ErrClosed", err)
	}
	l = open(t, dir, Options{})
	if l.LastSeq() != 10 {
		t.Fatalf("LastSeq after reopen = %d, want 10", l.LastSeq())
	}
	appendN(t, l, 11, 1)
	if got := replayAll(t, l, 1); !slices.Equal(got, wantRange(1, 11)) {
		t.Fatalf("replay after reopen: %v", got)
	}
}

// copyDir copies the log files of src into a new temporary directory.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func TestTornTailAtEveryOffset(t *testing.T) {
	base := t.TempDir()
	l, err := Open(base, Options{})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 1, 3)
	l.Close()
	seg := segmentName(1)
	// Records 1 and 2 end at 2*28 = 56; record 3 occupies bytes 56..83.
	for cut := int64(2 * frame20); cut < 3*frame20; cut++ {
		t.Run(fmt.Sprint(cut), func(t *testing.T) {
			dir := copyDir(t, base)
			if err := os.Truncate(filepath.Join(dir, seg), cut); err != nil {
				t.Fatal(err)
			}
			l := open(t, dir, Options{})
			if l.LastSeq() != 2 || l.Size() != 2*frame20 {
				t.Fatalf("LastSeq, Size = %d, %d; want 2, 56", l.LastSeq(), l.Size())
			}
			if got := replayAll(t, l, 1); !slices.Equal(got, wantRange(1, 2)) {
				t.Fatalf("replay: %v", got)
			}
			// The log continues at 3, right after the intact records.
			appendN(t, l, 3, 1)
			if got := replayAll(t, l, 1); !slices.Equal(got, wantRange(1, 3)) {
				t.Fatalf("replay after append: %v", got)
			}
			fi, err := os.Stat(filepath.Join(dir, seg))
			if err != nil {
				t.Fatal(err)
			}
			if fi.Size() != 3*frame20 {
				t.Fatalf("segment is %d bytes, want 84", fi.Size())
			}
		})
	}
}

func TestBadTailFrameIsTruncated(t *testing.T) {
	tests := []struct {
		name   string
		offset int64 // byte of the segment to damage; record 3 starts at 56
	}{
		{"data byte", 3*frame20 - 1},
		{"crc byte", 2*frame20 + 4},
		{"length byte grows past the file", 2*frame20 + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			l, err := Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			appendN(t, l, 1, 3)
			l.Close()
			flipByte(t, filepath.Join(dir, segmentName(1)), tt.offset)
			var logged bytes.Buffer
			l = open(t, dir, Options{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
			// The file was 84 bytes; the good prefix ends at 56: 28 dropped.
			if !strings.Contains(logged.String(), "bytes_dropped=28") {
				t.Fatalf("recovery log %q does not say 28 bytes were dropped", logged.String())
			}
			if got := replayAll(t, l, 1); !slices.Equal(got, wantRange(1, 2)) {
				t.Fatalf("replay: %v", got)
			}
			fi, err := os.Stat(filepath.Join(dir, segmentName(1)))
			if err != nil {
				t.Fatal(err)
			}
			if fi.Size() != 2*frame20 {
				t.Fatalf("segment is %d bytes after recovery, want 56", fi.Size())
			}
		})
	}
}

func flipByte(t *testing.T, path string, offset int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[offset] ^= 0xff
	if err := os.WriteFile(path, b, 0o640); err != nil {
		t.Fatal(err)
	}
}

// twoPerSegment fits two 28-byte frames (56 bytes) per segment, not three (84).
var twoPerSegment = Options{SegmentBytes: 60}

func TestCorruptionInOlderSegmentIsAnError(t *testing.T) {
	tests := []struct {
		name    string
		damage  func(t *testing.T, dir string)
		wantSeg string
	}{
		{"bad crc in first record", func(t *testing.T, dir string) {
			flipByte(t, filepath.Join(dir, segmentName(1)), 8+3)
		}, segmentName(1)},
		{"cut short", func(t *testing.T, dir string) {
			os.Truncate(filepath.Join(dir, segmentName(3)), frame20+10)
		}, segmentName(3)},
		{"segment missing", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, segmentName(3)))
		}, segmentName(1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			l, err := Open(dir, twoPerSegment)
			if err != nil {
				t.Fatal(err)
			}
			appendN(t, l, 1, 5) // segments 1 (1,2), 3 (3,4), 5 (5)
			l.Close()
			if got, want := segmentFiles(t, dir), []string{segmentName(1), segmentName(3), segmentName(5)}; !slices.Equal(got, want) {
				t.Fatalf("segments %v, want %v", got, want)
			}
			tt.damage(t, dir)
			_, err = Open(dir, twoPerSegment)
			var ce *CorruptError
			if !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) {
				t.Fatalf("Open: %v, want a CorruptError", err)
			}
			if filepath.Base(ce.Path) != tt.wantSeg {
				t.Fatalf("error names %s, want %s", ce.Path, tt.wantSeg)
			}
		})
	}
}

func TestReplayReportsCorruptionFoundLater(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, twoPerSegment)
	appendN(t, l, 1, 5)
	// Record 2 starts at 28 in segment 1; damage its data while the log is open.
	flipByte(t, filepath.Join(dir, segmentName(1)), frame20+8+5)
	var got []uint64
	err := l.Replay(1, func(seq uint64, _ []byte) error { got = append(got, seq); return nil })
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Replay: %v, want ErrCorrupt", err)
	}
	if !slices.Equal(got, []uint64{1}) {
		t.Fatalf("records before the damage: %v, want [1]", got)
	}
}

func TestSegmentRolloverAndTruncate(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, twoPerSegment)
	appendN(t, l, 1, 5)
	if got, want := segmentFiles(t, dir), []string{segmentName(1), segmentName(3), segmentName(5)}; !slices.Equal(got, want) {
		t.Fatalf("segments %v, want %v", got, want)
	}
	steps := []struct {
		upto      uint64
		wantFiles []string
		wantSize  int64
	}{
		// Records 1..3 consumed: segment 1 (1,2) goes, segment 3 still holds 4.
		{3, []string{segmentName(3), segmentName(5)}, 2 * frame20},
		{4, []string{segmentName(5)}, 1 * frame20},
		// The active segment stays even when all it holds is consumed.
		{5, []string{segmentName(5)}, 0},
	}
	for _, s := range steps {
		if err := l.Truncate(s.upto); err != nil {
			t.Fatalf("Truncate(%d): %v", s.upto, err)
		}
		if got := segmentFiles(t, dir); !slices.Equal(got, s.wantFiles) {
			t.Fatalf("after Truncate(%d): segments %v, want %v", s.upto, got, s.wantFiles)
		}
		if l.Size() != s.wantSize || l.FirstSeq() != s.upto+1 {
			t.Fatalf("after Truncate(%d): Size %d FirstSeq %d, want %d %d", s.upto, l.Size(), l.FirstSeq(), s.wantSize, s.upto+1)
		}
	}
	if err := l.Truncate(6); err == nil {
		t.Fatal("Truncate past LastSeq succeeded")
	}
	// Segment 5 holds 28 bytes; one more frame makes 56 <= 60, so 6 joins it.
	appendN(t, l, 6, 1)
	if got := replayAll(t, l, l.FirstSeq()); !slices.Equal(got, wantRange(6, 6)) {
		t.Fatalf("replay: %v", got)
	}
	if got := segmentFiles(t, dir); !slices.Equal(got, []string{segmentName(5)}) {
		t.Fatalf("segments %v", got)
	}
}

func TestCheckpointSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, twoPerSegment)
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 1, 4)
	if err := l.Truncate(3); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l = open(t, dir, twoPerSegment)
	// Record 4 of 28 bytes is left.
	if l.Checkpoint() != 3 || l.FirstSeq() != 4 || l.LastSeq() != 4 || l.Size() != frame20 {
		t.Fatalf("Checkpoint %d FirstSeq %d LastSeq %d Size %d; want 3 4 4 28", l.Checkpoint(), l.FirstSeq(), l.LastSeq(), l.Size())
	}
	if got := replayAll(t, l, l.FirstSeq()); !slices.Equal(got, wantRange(4, 4)) {
		t.Fatalf("replay: %v", got)
	}
	// The cursor recovered at Open frees exactly record 4.
	if err := l.Truncate(4); err != nil {
		t.Fatal(err)
	}
	if l.Size() != 0 {
		t.Fatalf("Size after consuming everything = %d", l.Size())
	}
}

func TestDamagedCheckpointIsAnError(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 1, 2)
	if err := l.Truncate(1); err != nil {
		t.Fatal(err)
	}
	l.Close()
	flipByte(t, filepath.Join(dir, checkpointName), 0)
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open: %v, want ErrCorrupt", err)
	}
}

func TestMaxBytesEdge(t *testing.T) {
	tests := []struct {
		name     string
		maxBytes int64
		accepted int // of 4 appends of 28-byte frames
	}{
		{"exactly three frames", 3 * frame20, 3}, // 84: the third lands exactly on the cap
		{"one byte short", 3*frame20 - 1, 2},     // 83: the third would make 84 > 83
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := open(t, t.TempDir(), Options{MaxBytes: tt.maxBytes})
			appendN(t, l, 1, tt.accepted)
			_, err := l.Append(context.Background(), rec20(tt.accepted+1))
			if !errors.Is(err, ErrFull) {
				t.Fatalf("append %d: %v, want ErrFull", tt.accepted+1, err)
			}
			if l.Size() != int64(tt.accepted*frame20) {
				t.Fatalf("Size %d, want %d", l.Size(), tt.accepted*frame20)
			}
			// Consuming one record frees 28 bytes: the refused append fits now.
			if err := l.Truncate(1); err != nil {
				t.Fatal(err)
			}
			appendN(t, l, tt.accepted+1, 1)
		})
	}
	l := open(t, t.TempDir(), Options{MaxBytes: 100})
	// 93 data bytes + 8 header = 101 > 100: can never fit.
	if _, err := l.Append(context.Background(), make([]byte, 93)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized append: %v, want ErrTooLarge", err)
	}
}

func TestLargeRecordGetsOwnSegment(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, Options{SegmentBytes: 1000})
	big := bytes.Repeat([]byte("z"), 3<<20) // bigger than a segment and than one write chunk
	appendN(t, l, 1, 1)
	seq, err := l.Append(context.Background(), big)
	if err != nil || seq != 2 {
		t.Fatalf("Append big: %d, %v", seq, err)
	}
	appendN(t, l, 3, 1)
	if got, want := segmentFiles(t, dir), []string{segmentName(1), segmentName(2), segmentName(3)}; !slices.Equal(got, want) {
		t.Fatalf("segments %v, want %v", got, want)
	}
	l.Close()
	l = open(t, dir, Options{SegmentBytes: 1000})
	got := replayAll(t, l, 1)
	if len(got) != 3 || got[1].rec != string(big) || got[2].rec != string(rec20(3)) {
		t.Fatalf("replay after reopen: %d records", len(got))
	}
}

func TestReaderFollowsTheLog(t *testing.T) {
	l := open(t, t.TempDir(), twoPerSegment)
	r, err := l.NewReader(1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("Next on empty log: %v, want EOF", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() {
		for i := 1; i <= 5; i++ {
			l.Append(ctx, rec20(i))
		}
	}()
	var got []entry
	for len(got) < 5 {
		seq, rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			if err := l.WaitFor(ctx, uint64(len(got)+1)); err != nil {
				t.Fatalf("WaitFor: %v", err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		got = append(got, entry{seq, string(rec)})
	}
	// Five records crossed segments 1, 3 and 5.
	if !slices.Equal(got, wantRange(1, 5)) {
		t.Fatalf("reader got %v", got)
	}
}

func TestAppendHonoursCancelledContext(t *testing.T) {
	l := open(t, t.TempDir(), Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Append(ctx, []byte("x")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Append: %v, want context.Canceled", err)
	}
	if l.LastSeq() != 0 || l.Size() != 0 {
		t.Fatalf("LastSeq %d Size %d after refused append", l.LastSeq(), l.Size())
	}
}
