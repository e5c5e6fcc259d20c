//go:build linux && (amd64 || arm64)

package chdb

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// madvPageout is MADV_PAGEOUT (Linux 5.4+, include/uapi/asm-generic/
// mman-common.h): reclaim the range's pages now. Clean file-backed pages
// are dropped and read again from the file when next touched.
const madvPageout = 21

// releaseStartupPages gives the kernel back the pages of the library's
// read-only mappings (its code and constants) that are resident, and
// returns how many bytes of them were resident before and after. The
// engine's start-up touches most of its code once — it registers
// thousands of functions, formats and settings — and never runs it again,
// which left some 150–200 MiB of tally's RSS in pages nobody used; the
// pages a statement needs later fault back in from the page cache or the
// file. Only mappings that are not writable are advised: their pages are
// the file's, so nothing can be lost. A kernel without MADV_PAGEOUT
// refuses the advice, and the pages stay.
func releaseStartupPages(lib string) (before, after uint64) {
	// The kernel names a mapping by its file's absolute, resolved path.
	if abs, err := filepath.Abs(lib); err == nil {
		lib = abs
	}
	if real, err := filepath.EvalSymlinks(lib); err == nil {
		lib = real
	}
	ranges, before := libraryMappings(lib)
	for _, r := range ranges {
		syscall.Syscall(syscall.SYS_MADVISE, r[0], r[1]-r[0], madvPageout) //nolint:errcheck // advice: a refusal changes nothing
	}
	_, after = libraryMappings(lib)
	return before, after
}

// libraryMappings lists the address ranges of lib's mappings that are
// readable and not writable, from /proc/self/smaps, with the bytes of
// them resident.
func libraryMappings(lib string) (ranges [][2]uintptr, resident uint64) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return nil, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	in := false
	for sc.Scan() {
		line := sc.Bytes()
		if fields := bytes.Fields(line); len(fields) >= 5 && bytes.Contains(fields[0], []byte("-")) && !bytes.HasSuffix(fields[0], []byte(":")) {
			// A mapping's header: range, permissions, offset, device, inode, path.
			in = len(fields) == 6 && string(fields[5]) == lib && fields[1][0] == 'r' && fields[1][1] == '-'
			if in {
				lo, hi, _ := strings.Cut(string(fields[0]), "-")
				a, err1 := strconv.ParseUint(lo, 16, 64)
				b, err2 := strconv.ParseUint(hi, 16, 64)
				if err1 != nil || err2 != nil {
					in = false
					continue
				}
				ranges = append(ranges, [2]uintptr{uintptr(a), uintptr(b)})
			}
			continue
		}
		if in && bytes.HasPrefix(line, []byte("Rss:")) {
			kb, _ := strconv.ParseUint(string(bytes.TrimSuffix(bytes.TrimSpace(line[len("Rss:"):]), []byte(" kB"))), 10, 64)
			resident += kb << 10
		}
	}
	return ranges, resident
}
