package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// ClickHouse is a private clickhouse-server started by
// deploy/clickhouse/start.sh in a directory of its own, on free loopback
// ports; Stop ends it with deploy/clickhouse/stop.sh (by its pidfile).
type ClickHouse struct {
	Addr string // native protocol host:port
	Dir  string
	root string
}

// StartClickHouse starts a server whose files live in dir, using the
// scripts of the module at root.
func StartClickHouse(ctx context.Context, root, dir string) (*ClickHouse, error) {
	tcp, err := freePort()
	if err != nil {
		return nil, err
	}
	http, err := freePort()
	if err != nil {
		return nil, err
	}
	for http == tcp {
		if http, err = freePort(); err != nil {
			return nil, err
		}
	}
	cmd := exec.CommandContext(ctx, filepath.Join(root, "deploy/clickhouse/start.sh"), dir)
	cmd.Env = append(os.Environ(), fmt.Sprintf("CH_TCP_PORT=%d", tcp), fmt.Sprintf("CH_HTTP_PORT=%d", http))
	out, err := cmd.CombinedOutput()
	ch := &ClickHouse{Addr: fmt.Sprintf("127.0.0.1:%d", tcp), Dir: dir, root: root}
	if err != nil {
		_ = ch.Stop()
		return nil, fmt.Errorf("start clickhouse: %w\n%s", err, out)
	}
	if addr := envValue(filepath.Join(dir, "clickhouse.env"), "CH_ADDR"); addr != "" {
		ch.Addr = addr
	}
	return ch, nil
}

// PID is the server's process id from its pidfile, 0 when unknown: the
// suite reads its CPU time from it.
func (c *ClickHouse) PID() int {
	b, err := os.ReadFile(filepath.Join(c.Dir, "clickhouse.pid"))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	return pid
}

// Stop stops the server; its files stay in Dir.
func (c *ClickHouse) Stop() error {
	out, err := exec.Command(filepath.Join(c.root, "deploy/clickhouse/stop.sh"), c.Dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("stop clickhouse: %w\n%s", err, out)
	}
	return nil
}

// envValue reads KEY=value from a shell-syntax file; "" when absent.
func envValue(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && k == key {
			return v
		}
	}
	return ""
}

// freePort asks the kernel for an unused loopback port.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// ModuleRoot is the directory holding go.mod, walking up from the working
// directory.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find module root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("find module root: %w", err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find module root: no go.mod in the working directory or above it")
		}
		dir = parent
	}
}
