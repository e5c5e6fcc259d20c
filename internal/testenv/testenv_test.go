package testenv

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestMain(m *testing.M) { Main(m) }

func TestFreePortCanBeListenedOn(t *testing.T) {
	port := FreePort(t)
	if port <= 0 || port > 65535 {
		t.Fatalf("FreePort = %d, want a port in 1..65535", port)
	}
	listener, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatalf("listen on the free port %d: %v", port, err)
	}
	listener.Close()
}

func TestModuleRootIsTwoLevelsUp(t *testing.T) {
	// go test runs in internal/testenv, two directories below go.mod.
	want, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	got, err := moduleRoot()
	if err != nil {
		t.Fatalf("moduleRoot: %v", err)
	}
	if got != want {
		t.Errorf("moduleRoot = %q, want %q", got, want)
	}
}

func TestRenderClickHouseConfig(t *testing.T) {
	tests := []struct {
		name     string
		template string
		dir      string
		want     string
		wantErr  bool
	}{
		{
			name:     "all placeholders",
			template: "<path>@@DIR@@/data/</path><tcp_port>@@TCP_PORT@@</tcp_port><http_port>@@HTTP_PORT@@</http_port><log>@@DIR@@/log</log>",
			dir:      "/tmp/x",
			want:     "<path>/tmp/x/data/</path><tcp_port>19000</tcp_port><http_port>18123</http_port><log>/tmp/x/log</log>",
		},
		{
			name:     "directory with XML special characters",
			template: "<path>@@DIR@@/</path>",
			dir:      "/tmp/a&b<c",
			want:     "<path>/tmp/a&amp;b&lt;c/</path>",
		},
		{
			name:     "unknown placeholder",
			template: "<x>@@NOPE@@</x>",
			dir:      "/tmp/x",
			wantErr:  true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := renderClickHouseConfig(tt.template, tt.dir, 19000, 18123)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("renderClickHouseConfig = %q, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("renderClickHouseConfig: %v", err)
			}
			if got != tt.want {
				t.Errorf("renderClickHouseConfig =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// TestTemplatesHaveOnlyKnownPlaceholders renders the real templates that
// deploy/clickhouse/start.sh also uses.
func TestTemplatesHaveOnlyKnownPlaceholders(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := writeClickHouseConfig(filepath.Join(root, templateDir), dir, 19000, 18123); err != nil {
		t.Fatalf("writeClickHouseConfig: %v", err)
	}
	config, err := os.ReadFile(filepath.Join(dir, "config.xml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"<tcp_port>19000</tcp_port>",
		"<http_port>18123</http_port>",
		"<listen_host>127.0.0.1</listen_host>",
		"<path>" + dir + "/data/</path>",
		"<users_config>" + dir + "/users.xml</users_config>",
	} {
		if !strings.Contains(string(config), want) {
			t.Errorf("config.xml lacks %s", want)
		}
	}
	// No element may point at the system's directories (/var/lib/clickhouse,
	// /var/log/clickhouse-server).
	if strings.Contains(string(config), ">/var/") {
		t.Errorf("config.xml has a path under /var/")
	}
	if strings.Contains(string(config), "<interserver_http_port>") {
		t.Errorf("config.xml opens an interserver port")
	}
}

func TestDatabaseNamePart(t *testing.T) {
	tests := []struct {
		testName string
		want     string
	}{
		{"TestRuns", "testruns"},
		{"TestRuns/by_agent#01", "testruns_by_agent_01"},
		{"Test-Ünïcode", "test__n_code"},
		// 45 letters are cut to maxNamePart = 40.
		{strings.Repeat("a", 45), strings.Repeat("a", 40)},
	}
	for _, tt := range tests {
		if got := databaseNamePart(tt.testName); got != tt.want {
			t.Errorf("databaseNamePart(%q) = %q, want %q", tt.testName, got, tt.want)
		}
	}
}

func TestChromiumPath(t *testing.T) {
	path := ChromiumPath(t)
	info, err := os.Stat(path)
	if err != nil {
		t.Fatalf("ChromiumPath = %q: %v", path, err)
	}
	if info.Mode().Perm()&0o111 == 0 {
		t.Errorf("ChromiumPath = %q is not executable", path)
	}
}

func TestClickHouseCommandFromEnvironment(t *testing.T) {
	dir := t.TempDir()
	combined := filepath.Join(dir, "clickhouse")
	server := filepath.Join(dir, "clickhouse-server")
	for _, path := range []string{combined, server} {
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name    string
		bin     string
		want    []string
		wantErr bool
	}{
		{name: "server binary", bin: server, want: []string{server}},
		{name: "combined binary runs its server subcommand", bin: combined, want: []string{combined, "server"}},
		{name: "missing file", bin: filepath.Join(dir, "nope"), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("TALLY_CLICKHOUSE_BIN", tt.bin)
			got, err := clickHouseCommand()
			if tt.wantErr {
				if err == nil {
					t.Fatalf("clickHouseCommand = %q, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("clickHouseCommand: %v", err)
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("clickHouseCommand = %q, want %q", got, tt.want)
			}
		})
	}
}
