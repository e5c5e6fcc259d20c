package wal

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
)

// scanResult is what verifying one segment found.
type scanResult struct {
	records         uint64 // good frames
	good            int64  // offset just past the last good frame
	fileBytes       int64
	bad             string // why the frame at good is bad; "" when the file ends cleanly
	unconsumedBytes int64  // framed bytes of good records after the checkpoint
	ckptOffset      int64  // offset just past the checkpoint record, -1 when not in this segment
}

// scanSegment reads every frame of the segment whose first record is first,
// checking lengths and CRCs, and stops at the first bad one.
func scanSegment(path string, first, ckpt uint64) (scanResult, error) {
	res := scanResult{ckptOffset: -1}
	f, err := os.Open(path)
	if err != nil {
		return res, fmt.Errorf("wal: open segment: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return res, fmt.Errorf("wal: stat segment: %w", err)
	}
	res.fileBytes = info.Size()
	br := bufio.NewReaderSize(f, 1<<20)
	var hdr [headerBytes]byte
	var data []byte
	for res.good < res.fileBytes {
		remaining := res.fileBytes - res.good
		if remaining < headerBytes {
			res.bad = fmt.Sprintf("partial frame header (%d of %d bytes)", remaining, headerBytes)
			return res, nil
		}
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return res, fmt.Errorf("wal: read segment %s: %w", path, err)
		}
		n := int64(binary.LittleEndian.Uint32(hdr[:4]))
		if n > remaining-headerBytes {
			res.bad = fmt.Sprintf("frame of %d bytes runs past the end of the file (%d bytes left)", n, remaining-headerBytes)
			return res, nil
		}
		if int64(cap(data)) < n {
			data = make([]byte, n)
		}
		data = data[:n]
		if _, err := io.ReadFull(br, data); err != nil {
			return res, fmt.Errorf("wal: read segment %s: %w", path, err)
		}
		if frameCRC(data) != binary.LittleEndian.Uint32(hdr[4:]) {
			res.bad = "checksum mismatch"
			return res, nil
		}
		frame := headerBytes + n
		seq := first + res.records
		res.good += frame
		res.records++
		switch {
		case seq == ckpt:
			res.ckptOffset = res.good
		case seq > ckpt:
			res.unconsumedBytes += frame
		}
	}
	return res, nil
}

// readCheckpoint returns the last consumed record stored in path, 0 when the
// file does not exist.
func readCheckpoint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("wal: read checkpoint: %w", err)
	}
	if len(b) != checkpointLen || binary.LittleEndian.Uint32(b[12:]) != checkpointMark ||
		crc32Castagnoli(b[:8]) != binary.LittleEndian.Uint32(b[8:12]) {
		return 0, &CorruptError{Path: path, Offset: -1, Reason: "checkpoint file is damaged"}
	}
	return binary.LittleEndian.Uint64(b[:8]), nil
}

// writeCheckpoint stores seq as the last consumed record: written to a
// temporary file, fsynced, renamed over the checkpoint and the directory
// fsynced, so a crash leaves either the old or the new checkpoint.
func writeCheckpoint(dir string, seq uint64, noSync bool) error {
	var b [checkpointLen]byte
	binary.LittleEndian.PutUint64(b[:8], seq)
	binary.LittleEndian.PutUint32(b[8:12], crc32Castagnoli(b[:8]))
	binary.LittleEndian.PutUint32(b[12:], checkpointMark)
	tmp := filepath.Join(dir, checkpointTmp)
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o640)
	if err != nil {
		return fmt.Errorf("wal: write checkpoint: %w", err)
	}
	if _, err := f.Write(b[:]); err != nil {
		f.Close()
		return fmt.Errorf("wal: write checkpoint: %w", err)
	}
	if !noSync {
		if err := f.Sync(); err != nil {
			f.Close()
			return fmt.Errorf("wal: fsync checkpoint: %w", err)
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("wal: write checkpoint: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, checkpointName)); err != nil {
		return fmt.Errorf("wal: install checkpoint: %w", err)
	}
	if noSync {
		return nil
	}
	return syncDir(dir)
}

func crc32Castagnoli(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }
