// Package testenv starts the external services that tally's integration tests
// run against: a private ClickHouse server, Alertmanager, and headless Chromium.
//
// Every service is an ordinary process bound to 127.0.0.1 on a free port, with
// its files in a temporary directory, and is stopped by its PID. A missing
// binary fails the test with the command that installs it; tests never skip.
//
// Packages with ClickHouse tests call Main from TestMain:
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
package testenv

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
)

// installHint is appended to every "binary not found" failure.
const installHint = "run `make deps` (scripts/deps.sh) or `apt-get install %s`"

// Main runs the tests of a package and then stops the shared ClickHouse server
// if one was started, and exits with the tests' status. Call it from TestMain.
func Main(m *testing.M) {
	shared.mainCalled.Store(true)
	code := m.Run()
	for _, closeFn := range []func() error{shared.close, embedded.close} {
		if err := closeFn(); err != nil {
			fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}
	os.Exit(code)
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return port
}

// freePort asks the kernel for an unused port by listening on port 0. The port
// is free once the listener closes; another process may still take it before
// the caller binds it, so callers that start servers retry on bind failures.
func freePort() (int, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	port := listener.Addr().(*net.TCPAddr).Port
	if err := listener.Close(); err != nil {
		return 0, fmt.Errorf("find a free port: close listener: %w", err)
	}
	return port, nil
}

// reservePort is freePort holding the port: the listener stays open, so
// no other process gets the port, until the caller closes it right before
// its server binds the port. For servers whose ports must all be known
// long before each starts (a cluster's nodes name each other's ports).
func reservePort() (int, net.Listener, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, nil, fmt.Errorf("reserve a free port: %w", err)
	}
	return listener.Addr().(*net.TCPAddr).Port, listener, nil
}

// moduleRoot returns the directory holding go.mod, walking up from the
// working directory (a package directory when run by go test).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find module root: %w", err)
	}
	for {
		_, err := os.Stat(filepath.Join(dir, "go.mod"))
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("find module root: %w", err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find module root: no go.mod in the working directory or above it")
		}
		dir = parent
	}
}

// firstExecutable returns the first path that names an executable file, or ""
// when none does. Empty paths are skipped.
func firstExecutable(paths ...string) string {
	for _, path := range paths {
		if path == "" {
			continue
		}
		info, err := os.Stat(path)
		if err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0 {
			return path
		}
	}
	return ""
}
