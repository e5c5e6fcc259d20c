package chdb

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"
)

// LibraryName is the file name of chDB's shared library.
const LibraryName = "libchdb.so"

// LibraryEnv names the environment variable that locates the library, the
// same variable chDB's own Go binding reads.
const LibraryEnv = "CHDB_LIB_PATH"

// PinnedPackage is the npm platform package `make deps` fetches the library
// from (scripts/chdb.sh pins its SHA-256): chDB 26.7.3, ClickHouse 26.7.2.1.
const PinnedPackage = "@chdb/lib-linux-x64-gnu@26.7.3-stable.1"

// ErrLibraryNotFound is returned by FindLibrary when no candidate exists.
var ErrLibraryNotFound = errors.New("chdb: " + LibraryName + " not found")

// FindLibrary returns the path of libchdb.so: explicit (a flag) if set, else
// $CHDB_LIB_PATH, else next to the running executable (or in its ../lib),
// else .tally/lib in the working directory or one of its parents (where
// `make deps` puts it). The error lists every place looked and how to get
// the library.
func FindLibrary(explicit string) (string, error) {
	if explicit != "" {
		if _, err := os.Stat(explicit); err != nil {
			return "", fmt.Errorf("chdb library %s: %w", explicit, err)
		}
		return explicit, nil
	}
	if env := os.Getenv(LibraryEnv); env != "" {
		if _, err := os.Stat(env); err != nil {
			return "", fmt.Errorf("chdb library %s (from $%s): %w", env, LibraryEnv, err)
		}
		return env, nil
	}
	var looked []string
	if exe, err := os.Executable(); err == nil {
		dir := filepath.Dir(exe)
		looked = append(looked, filepath.Join(dir, LibraryName), filepath.Join(dir, "..", "lib", LibraryName))
	}
	if wd, err := os.Getwd(); err == nil {
		for dir := wd; ; dir = filepath.Dir(dir) {
			looked = append(looked, filepath.Join(dir, ".tally", "lib", LibraryName))
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	for _, p := range looked {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w (looked at $%s, %s); run `make deps` in tally's checkout to fetch it "+
		"(npm package %s), or point --chdb-lib or $%s at a %s from chDB's releases",
		ErrLibraryNotFound, LibraryEnv, strings.Join(looked, ", "), PinnedPackage, LibraryEnv, LibraryName)
}

// library holds the chDB C functions tally calls, resolved from one dlopen
// and bound with purego (no cgo: a build without the library still links).
type library struct {
	path string

	connect           func(argc int32, argv **byte) unsafe.Pointer // chdb_connection *
	closeConn         func(conn unsafe.Pointer)
	query             func(conn unsafe.Pointer, query *byte, queryLen uintptr, format *byte, formatLen uintptr) unsafe.Pointer
	queryWithParams   func(conn unsafe.Pointer, query *byte, queryLen uintptr, format *byte, formatLen uintptr, names **byte, nameLens *uintptr, values **byte, valueLens *uintptr, count uintptr) unsafe.Pointer
	destroyResult     func(result unsafe.Pointer)
	resultBuffer      func(result unsafe.Pointer) *byte
	resultLength      func(result unsafe.Pointer) uintptr
	resultError       func(result unsafe.Pointer) string
	insertStream      func(conn unsafe.Pointer, query *byte, queryLen uintptr, format *byte, formatLen uintptr) unsafe.Pointer
	insertError       func(stream unsafe.Pointer) string
	insertAppend      func(stream unsafe.Pointer, data *byte, n uintptr) int32
	insertDone        func(stream unsafe.Pointer) unsafe.Pointer
	insertDestroy     func(stream unsafe.Pointer)
	setSignalHandlers func(enabled int32)
}

// loadLibrary dlopens path and resolves the functions, failing with the
// name of the first one missing (an older chDB than this binding needs).
func loadLibrary(path string) (*library, error) {
	handle, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, fmt.Errorf("chdb: load %s: %w", path, err)
	}
	lib := &library{path: path}
	for _, sym := range []struct {
		name string
		fn   any
	}{
		{"chdb_connect", &lib.connect},
		{"chdb_close_conn", &lib.closeConn},
		{"chdb_query_n", &lib.query},
		{"chdb_query_with_params_n", &lib.queryWithParams},
		{"chdb_destroy_query_result", &lib.destroyResult},
		{"chdb_result_buffer", &lib.resultBuffer},
		{"chdb_result_length", &lib.resultLength},
		{"chdb_result_error", &lib.resultError},
		{"chdb_stream_insert_n", &lib.insertStream},
		{"chdb_stream_insert_error", &lib.insertError},
		{"chdb_stream_append", &lib.insertAppend},
		{"chdb_stream_done", &lib.insertDone},
		{"chdb_destroy_insert_stream", &lib.insertDestroy},
		{"chdb_set_signal_handlers_enabled", &lib.setSignalHandlers},
	} {
		addr, err := purego.Dlsym(handle, sym.name)
		if err != nil {
			return nil, fmt.Errorf("chdb: %s has no %s (tally needs chDB 26.7 or newer; %s is the tested one): %w",
				path, sym.name, PinnedPackage, err)
		}
		purego.RegisterFunc(sym.fn, addr)
	}
	return lib, nil
}

// cString is a NUL-terminated copy of s for C; the caller keeps it alive.
func cString(s string) []byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return b
}
