package testenv

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	// zooKeeperJar is where Debian's zookeeper package installs the server.
	zooKeeperJar = "/usr/share/java/zookeeper.jar"
	// zooKeeperReadyTimeout bounds how long a starting ZooKeeper may take.
	zooKeeperReadyTimeout = 60 * time.Second
)

// ZooKeeperServer is a standalone ZooKeeper process private to one test,
// listening on 127.0.0.1, for ClickHouse replication and distributed DDL.
type ZooKeeperServer struct {
	// Host and Port are the client address.
	Host string
	Port int
	// Dir holds the config, data and log.
	Dir string

	proc *process
}

// StartZooKeeper starts a standalone ZooKeeper (Debian's zookeeper package,
// run with java directly) with its data in t.TempDir(), and kills it when the
// test ends.
func StartZooKeeper(t testing.TB) *ZooKeeperServer {
	t.Helper()
	java, err := exec.LookPath("java")
	if err != nil {
		t.Fatalf("testenv: ZooKeeper: no java on PATH; "+installHint, "zookeeper")
	}
	if _, err := os.Stat(zooKeeperJar); err != nil {
		t.Fatalf("testenv: ZooKeeper: %s missing; "+installHint, zooKeeperJar, "zookeeper")
	}
	dir := t.TempDir()
	var lastErr error
	for attempt := 0; attempt < startAttempts; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatalf("testenv: %v", err)
		}
		zk := &ZooKeeperServer{Host: "127.0.0.1", Port: port, Dir: dir}
		if lastErr = zk.start(java); lastErr == nil {
			t.Cleanup(func() {
				if err := zk.proc.stop(syscall.SIGKILL, 0); err != nil {
					t.Errorf("testenv: stop ZooKeeper: %v", err)
				}
			})
			return zk
		}
	}
	t.Fatalf("testenv: ZooKeeper: %v", lastErr)
	return nil
}

func (z *ZooKeeperServer) start(java string) error {
	data := filepath.Join(z.Dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return fmt.Errorf("create ZooKeeper data directory: %w", err)
	}
	cfg := fmt.Sprintf("tickTime=500\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n"+
		"maxClientCnxns=0\nadmin.enableServer=false\n4lw.commands.whitelist=ruok\n", data, z.Port)
	cfgPath := filepath.Join(z.Dir, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return fmt.Errorf("write ZooKeeper config: %w", err)
	}
	logPath := filepath.Join(z.Dir, "zookeeper.log")
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open ZooKeeper log: %w", err)
	}
	defer out.Close()
	proc, err := startProcess(java, []string{"-Xmx256m", "-Dzookeeper.admin.enableServer=false",
		"-cp", zooKeeperJar, "org.apache.zookeeper.server.ZooKeeperServerMain", cfgPath}, out)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(zooKeeperReadyTimeout)
	for {
		if z.ruok() {
			z.proc = proc
			return nil
		}
		if !proc.running() {
			return fmt.Errorf("zookeeper exited during startup (%v); log:\n%s", proc.waitErr, tailFile(logPath, 2000))
		}
		if time.Now().After(deadline) {
			_ = proc.stop(syscall.SIGKILL, 0)
			return fmt.Errorf("zookeeper on port %d not ready after %s; log:\n%s", z.Port, zooKeeperReadyTimeout, tailFile(logPath, 2000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ruok asks the four-letter "ruok" and reports whether ZooKeeper said imok.
func (z *ZooKeeperServer) ruok() bool {
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(z.Host, strconv.Itoa(z.Port)), time.Second)
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte("ruok")); err != nil {
		return false
	}
	reply, _ := bufio.NewReader(conn).ReadString('\n')
	return strings.HasPrefix(reply, "imok")
}

// ClickHouseCluster is a set of ClickHouse servers on 127.0.0.1 that form one
// cluster (remote_servers) named Name: Shards[i][j] is replica j of shard i.
type ClickHouseCluster struct {
	Name   string
	Shards [][]*ClickHouseServer
}

// ClusterSpec describes a test cluster.
type ClusterSpec struct {
	// Name is the cluster's name in remote_servers.
	Name string
	// Replicas per shard, e.g. {2, 1}: two shards, the first with two
	// replicas.
	Replicas []int
	// ZooKeeper coordinates replication and ON CLUSTER DDL; nil for a
	// cluster without it (Distributed tables only, no Replicated ones).
	ZooKeeper *ZooKeeperServer
}

// StartClickHouseCluster starts one ClickHouse server per replica, each with
// the private config of deploy/clickhouse plus a config.d/cluster.xml holding
// the cluster's remote_servers, the node's macros ({shard} 1-based,
// {replica} r1, r2…), ZooKeeper and an interserver port, and a users.d
// profile with the settings cluster mode needs (the sections of
// deploy/clickhouse-cluster/). The servers are killed when the test ends.
func StartClickHouseCluster(t testing.TB, spec ClusterSpec) *ClickHouseCluster {
	t.Helper()
	command, err := clickHouseCommand()
	if err != nil {
		t.Fatalf("testenv: ClickHouse: %v", err)
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	type node struct {
		tcp, http, interserver int
		reserved               []net.Listener // released right before the node starts
		dir                    string
	}
	nodes := make([][]node, len(spec.Replicas))
	for i, n := range spec.Replicas {
		for j := 0; j < n; j++ {
			var nd node
			// Every node's config names every node's native port, so all
			// ports are chosen first; each stays held until its node
			// starts, or a test running alongside could take it meanwhile.
			for _, p := range []*int{&nd.tcp, &nd.http, &nd.interserver} {
				port, l, err := reservePort()
				if err != nil {
					t.Fatalf("testenv: %v", err)
				}
				*p = port
				nd.reserved = append(nd.reserved, l)
				t.Cleanup(func() { l.Close() })
			}
			nd.dir = t.TempDir()
			nodes[i] = append(nodes[i], nd)
		}
	}
	var remote strings.Builder
	for _, shard := range nodes {
		remote.WriteString("      <shard><internal_replication>" + strconv.FormatBool(spec.ZooKeeper != nil) + "</internal_replication>\n")
		for _, nd := range shard {
			fmt.Fprintf(&remote, "        <replica><host>127.0.0.1</host><port>%d</port></replica>\n", nd.tcp)
		}
		remote.WriteString("      </shard>\n")
	}
	zk := ""
	if spec.ZooKeeper != nil {
		zk = fmt.Sprintf("  <zookeeper><node><host>%s</host><port>%d</port></node><session_timeout_ms>10000</session_timeout_ms></zookeeper>\n"+
			"  <distributed_ddl><path>/clickhouse/task_queue/ddl</path></distributed_ddl>\n",
			spec.ZooKeeper.Host, spec.ZooKeeper.Port)
	}
	cluster := &ClickHouseCluster{Name: spec.Name}
	for i, shard := range nodes {
		var servers []*ClickHouseServer
		for j, nd := range shard {
			if err := writeClickHouseConfig(filepath.Join(root, templateDir), nd.dir, nd.tcp, nd.http); err != nil {
				t.Fatalf("testenv: %v", err)
			}
			extra := fmt.Sprintf("<?xml version=\"1.0\"?>\n<yandex>\n"+
				"  <interserver_http_port>%d</interserver_http_port>\n  <interserver_http_host>127.0.0.1</interserver_http_host>\n"+
				"  <remote_servers>\n    <%s>\n%s    </%s>\n  </remote_servers>\n%s"+
				"  <macros><shard>%d</shard><replica>r%d</replica></macros>\n</yandex>\n",
				nd.interserver, spec.Name, remote.String(), spec.Name, zk, i+1, j+1)
			if err := os.MkdirAll(filepath.Join(nd.dir, "config.d"), 0o755); err != nil {
				t.Fatalf("testenv: %v", err)
			}
			if err := os.WriteFile(filepath.Join(nd.dir, "config.d", "cluster.xml"), []byte(extra), 0o644); err != nil {
				t.Fatalf("testenv: write cluster config: %v", err)
			}
			// On 18.16 tally cannot send string-valued settings; cluster mode
			// needs them in the user's profile (schema.ProfileSettings).
			if err := os.MkdirAll(filepath.Join(nd.dir, "users.d"), 0o755); err != nil {
				t.Fatalf("testenv: %v", err)
			}
			profile := "<?xml version=\"1.0\"?>\n<yandex><profiles><default>\n" +
				"  <distributed_product_mode>local</distributed_product_mode>\n" +
				"  <load_balancing>in_order</load_balancing>\n</default></profiles></yandex>\n"
			if err := os.WriteFile(filepath.Join(nd.dir, "users.d", "cluster.xml"), []byte(profile), 0o644); err != nil {
				t.Fatalf("testenv: write cluster profile: %v", err)
			}
			server := &ClickHouseServer{
				Addr:     net.JoinHostPort("127.0.0.1", strconv.Itoa(nd.tcp)),
				HTTPAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(nd.http)),
				Dir:      nd.dir,
				command:  command,
			}
			for _, l := range nd.reserved {
				l.Close()
			}
			if err := server.start(); err != nil {
				t.Fatalf("testenv: ClickHouse shard %d replica %d: %v", i+1, j+1, err)
			}
			shardNo, replicaNo := i+1, j+1
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("testenv: ClickHouse shard %d replica %d (%s): %s", shardNo, replicaNo, server.Addr, tailFile(filepath.Join(server.Dir, "log", "clickhouse-server.err.log"), 8000))
				}
				if err := server.stop(syscall.SIGKILL); err != nil {
					t.Errorf("testenv: stop ClickHouse: %v", err)
				}
			})
			servers = append(servers, server)
		}
		cluster.Shards = append(cluster.Shards, servers)
	}
	if spec.ZooKeeper != nil {
		for _, server := range cluster.Nodes() {
			if err := server.waitDistributedDDL(t, spec.Name); err != nil {
				t.Fatalf("testenv: %v", err)
			}
		}
	}
	return cluster
}

// waitDistributedDDL waits until the server runs ON CLUSTER DDL. ClickHouse
// 18.16 dereferences its DDL worker's ZooKeeper session, set by the worker's
// thread shortly after start-up, when a distributed DDL query arrives: one
// that arrives before crashes the server (a null pointer in
// zkutil::ZooKeeper::createImpl). So: wait for a ZooKeeper session, then
// send a harmless ON CLUSTER statement; if the server crashed on it, start
// it again (the worker's thread gets its session first this time) and retry.
func (s *ClickHouseServer) waitDistributedDDL(t testing.TB, cluster string) error {
	t.Helper()
	for attempt := 1; ; attempt++ {
		if err := s.waitZooKeeper(); err != nil {
			return err
		}
		err := s.exec("CREATE DATABASE IF NOT EXISTS testenv_ddl_probe ON CLUSTER `" + cluster + "`")
		if err == nil {
			return nil
		}
		if !s.exitedWithin(10*time.Second) || attempt == startAttempts {
			return fmt.Errorf("ClickHouse at %s: distributed DDL: %w; %s", s.Addr, err, s.logTail())
		}
		t.Logf("testenv: ClickHouse at %s crashed on its first distributed DDL (18.16's DDL worker race); restarting it", s.Addr)
		_ = s.stop(syscall.SIGKILL)
		if err := s.start(); err != nil {
			return err
		}
	}
}

// exitedWithin reports whether the server process exits within d (a crash
// in progress when the client saw its connection close).
func (s *ClickHouseServer) exitedWithin(d time.Duration) bool {
	s.mu.Lock()
	proc := s.proc
	s.mu.Unlock()
	if proc == nil {
		return true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-proc.exited:
		return true
	case <-timer.C:
		return false
	}
}

// waitZooKeeper waits until the server has a ZooKeeper session: 18.16 can
// crash (a null session in zkutil::ZooKeeper::createImpl) when distributed
// DDL arrives before the session exists.
func (s *ClickHouseServer) waitZooKeeper() error {
	deadline := time.Now().Add(zooKeeperReadyTimeout)
	for {
		err := s.exec("SELECT count() FROM system.zookeeper WHERE path = '/'")
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ClickHouse at %s has no ZooKeeper session after %s: %w", s.Addr, zooKeeperReadyTimeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Nodes lists every server, shard by shard.
func (c *ClickHouseCluster) Nodes() []*ClickHouseServer {
	var out []*ClickHouseServer
	for _, shard := range c.Shards {
		out = append(out, shard...)
	}
	return out
}
