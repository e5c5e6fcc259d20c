// Package deploy_test validates the deployment files in deploy/: each with
// the real validator where one is installable here (docker-compose config,
// systemd-analyze verify), and structurally otherwise:
//
//   - Kubernetes manifests: no offline schema validator is packaged by Debian
//     12 (kubeconform and kubeval are not packaged; kubectl's validation needs
//     an API server), so the test parses them and checks what a deployment
//     relies on: probes, resources, selectors, names that refer to each other.
//   - Dockerfile: no Dockerfile linter is packaged by Debian 12 (hadolint is
//     not) and building needs a Docker daemon, which these machines lack, so
//     the test checks the stages, the build command, the user and the sources.
//   - ClickHouse cluster config: parsed as XML and checked for a consistent
//     2 shards × 2 replicas layout; the cluster test in package schema runs
//     real servers with the same sections.
package deploy_test

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// installHint tells how to get a missing validator.
const installHint = "run `make deps` (scripts/deps.sh) or `apt-get install %s`"

// ---------------------------------------------------------------- compose

// composeFile is the part of a Compose file the checks read.
type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
}

type composeService struct {
	Image       string                                `yaml:"image"`
	Build       *struct{ Context, Dockerfile string } `yaml:"build"`
	Command     []string                              `yaml:"command"`
	Environment map[string]string                     `yaml:"environment"`
	Volumes     []string                              `yaml:"volumes"`
	DependsOn   map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Healthcheck *struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
}

// composeCommand returns the command that validates a Compose file: the
// Docker CLI plugin when it works, else Debian's docker-compose.
func composeCommand(t *testing.T) []string {
	t.Helper()
	if out, err := exec.Command("docker", "compose", "version").CombinedOutput(); err == nil &&
		bytes.Contains(out, []byte("version")) {
		return []string{"docker", "compose"}
	}
	if path, err := exec.LookPath("docker-compose"); err == nil {
		return []string{path}
	}
	t.Fatalf("no Compose validator: neither `docker compose` nor docker-compose works; "+installHint, "docker-compose")
	return nil
}

func TestComposeConfigValidates(t *testing.T) {
	command := composeCommand(t)
	run := func(env ...string) (string, error) {
		args := append(command[1:len(command):len(command)], "-f", "docker-compose.yaml", "config", "-q")
		cmd := exec.Command(command[0], args...)
		// Only PATH and HOME from the outside: the file's own defaults must do.
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run("TALLY_KEY_SHA256=" + strings.Repeat("ab", 32)); err != nil {
		t.Fatalf("%s config: %v\n%s", strings.Join(command, " "), err, out)
	}
	// Without a key hash, tally would refuse to listen on 0.0.0.0: the file
	// makes the variable mandatory so that compose says so up front.
	out, err := run()
	if err == nil {
		t.Fatalf("compose config without TALLY_KEY_SHA256 succeeded; want it to demand the key hash")
	}
	if !strings.Contains(out, "TALLY_KEY_SHA256") {
		t.Errorf("compose config without TALLY_KEY_SHA256: error does not name the variable:\n%s", out)
	}
}

func TestComposeReferencesAreConsistent(t *testing.T) {
	var f composeFile
	readYAML(t, "docker-compose.yaml", &f)

	for _, name := range []string{"tally", "clickhouse", "alertmanager"} {
		if _, ok := f.Services[name]; !ok {
			t.Errorf("service %q missing", name)
		}
	}
	if img := f.Services["clickhouse"].Image; !strings.HasPrefix(img, "clickhouse/clickhouse-server:") {
		t.Errorf("clickhouse image = %q, want clickhouse/clickhouse-server:<current>", img)
	}
	if img := f.Services["alertmanager"].Image; !strings.HasPrefix(img, "prom/alertmanager:") {
		t.Errorf("alertmanager image = %q, want prom/alertmanager:<version>", img)
	}

	tally := f.Services["tally"]
	if tally.Build == nil || tally.Build.Dockerfile == "" {
		t.Errorf("tally service: no build.dockerfile")
	} else if _, err := os.Stat(filepath.Join(tally.Build.Context, tally.Build.Dockerfile)); err != nil {
		t.Errorf("tally build: %v", err)
	}
	if i := slices.Index(tally.Command, "--listen"); i < 0 || i+1 >= len(tally.Command) || tally.Command[i+1] != "0.0.0.0:4318" {
		t.Errorf("tally command %q: want --listen 0.0.0.0:4318", tally.Command)
	}
	if !strings.Contains(tally.Environment["TALLY_AUTH_KEY"], "${TALLY_KEY_SHA256") {
		t.Errorf("TALLY_AUTH_KEY = %q: want the key hash from the environment", tally.Environment["TALLY_AUTH_KEY"])
	}
	if got := tally.Environment["TALLY_CLICKHOUSE_ADDR"]; got != "clickhouse:9000" {
		t.Errorf("TALLY_CLICKHOUSE_ADDR = %q, want clickhouse:9000 (the service's native port)", got)
	}
	for dep, d := range tally.DependsOn {
		if d.Condition != "service_healthy" {
			t.Errorf("tally depends_on %s: condition %q, want service_healthy", dep, d.Condition)
		}
		if f.Services[dep].Healthcheck == nil {
			t.Errorf("tally waits for %s to be healthy, but %s has no healthcheck", dep, dep)
		}
	}
	if len(tally.DependsOn) == 0 {
		t.Errorf("tally has no depends_on")
	}

	used := map[string]bool{}
	for name, svc := range f.Services {
		if svc.Healthcheck == nil || len(svc.Healthcheck.Test) < 2 {
			t.Errorf("service %s: no healthcheck test", name)
		}
		for _, v := range svc.Volumes {
			source, _, ok := strings.Cut(v, ":")
			if !ok {
				t.Errorf("service %s: volume %q has no target", name, v)
				continue
			}
			if strings.HasPrefix(source, ".") || strings.HasPrefix(source, "/") {
				if _, err := os.Stat(source); err != nil {
					t.Errorf("service %s: bind mount source: %v", name, err)
				}
				continue
			}
			used[source] = true
			if _, ok := f.Volumes[source]; !ok {
				t.Errorf("service %s uses volume %q, which is not declared under volumes:", name, source)
			}
		}
	}
	for name := range f.Volumes {
		if !used[name] {
			t.Errorf("volume %q is declared but no service uses it", name)
		}
	}
}

// ------------------------------------------------------------- kubernetes

// manifest is one Kubernetes object, decoded generically.
type manifest struct {
	file string
	obj  map[string]any
}

func (m manifest) kind() string { return str(m.obj, "kind") }
func (m manifest) name() string { return str(m.obj, "metadata", "name") }

// dig walks nested maps (string keys) and lists (int keys).
func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func str(v any, path ...any) string {
	s, _ := dig(v, path...).(string)
	return s
}

func stringMap(v any) map[string]string {
	m, _ := v.(map[string]any)
	out := map[string]string{}
	for k, val := range m {
		out[k] = fmt.Sprint(val)
	}
	return out
}

func loadManifests(t *testing.T) []manifest {
	t.Helper()
	files, err := filepath.Glob("kubernetes/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in deploy/kubernetes (%v)", err)
	}
	var out []manifest
	for _, file := range files {
		if filepath.Base(file) == "kustomization.yaml" {
			continue
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var obj map[string]any
			err := dec.Decode(&obj)
			if err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				t.Fatalf("%s: %v", file, err)
			}
			if obj == nil {
				continue
			}
			out = append(out, manifest{file: file, obj: obj})
		}
	}
	return out
}

func TestKubernetesManifests(t *testing.T) {
	manifests := loadManifests(t)
	byKind := map[string][]manifest{}
	for _, m := range manifests {
		if str(m.obj, "apiVersion") == "" || m.kind() == "" || m.name() == "" {
			t.Errorf("%s: object without apiVersion, kind or metadata.name", m.file)
		}
		byKind[m.kind()] = append(byKind[m.kind()], m)
	}
	for _, kind := range []string{"Deployment", "Service", "PodDisruptionBudget", "ConfigMap", "Secret"} {
		if len(byKind[kind]) != 1 {
			t.Fatalf("want exactly one %s, have %d", kind, len(byKind[kind]))
		}
	}
	wantAPI := map[string]string{"Deployment": "apps/v1", "PodDisruptionBudget": "policy/v1", "Service": "v1"}
	for kind, api := range wantAPI {
		if got := str(byKind[kind][0].obj, "apiVersion"); got != api {
			t.Errorf("%s apiVersion = %q, want %q", kind, got, api)
		}
	}

	dep := byKind["Deployment"][0].obj
	podLabels := stringMap(dig(dep, "spec", "template", "metadata", "labels"))
	depSelector := stringMap(dig(dep, "spec", "selector", "matchLabels"))
	if len(depSelector) == 0 || !subset(depSelector, podLabels) {
		t.Errorf("Deployment selector %v does not select its pod labels %v", depSelector, podLabels)
	}
	if r, _ := dig(dep, "spec", "replicas").(int); r < 2 {
		t.Errorf("Deployment replicas = %v, want at least 2", dig(dep, "spec", "replicas"))
	}

	// PDB and Service must select exactly the Deployment's pods: their
	// selectors are subsets of the pod labels, and at least as narrow as the
	// Deployment's own selector.
	pdb := byKind["PodDisruptionBudget"][0].obj
	pdbSelector := stringMap(dig(pdb, "spec", "selector", "matchLabels"))
	if !subset(pdbSelector, podLabels) || !subset(depSelector, pdbSelector) {
		t.Errorf("PodDisruptionBudget selector %v does not match the Deployment (selector %v, pod labels %v)",
			pdbSelector, depSelector, podLabels)
	}
	if dig(pdb, "spec", "maxUnavailable") == nil && dig(pdb, "spec", "minAvailable") == nil {
		t.Errorf("PodDisruptionBudget sets neither maxUnavailable nor minAvailable")
	}
	svc := byKind["Service"][0].obj
	svcSelector := stringMap(dig(svc, "spec", "selector"))
	if !subset(svcSelector, podLabels) || !subset(depSelector, svcSelector) {
		t.Errorf("Service selector %v does not match the Deployment's pods %v", svcSelector, podLabels)
	}

	containers, _ := dig(dep, "spec", "template", "spec", "containers").([]any)
	if len(containers) != 1 {
		t.Fatalf("Deployment has %d containers, want 1", len(containers))
	}
	c := containers[0]
	ports := map[string]int{}
	containerPorts, _ := dig(c, "ports").([]any)
	for i := range containerPorts {
		p, _ := dig(c, "ports", i, "containerPort").(int)
		ports[str(c, "ports", i, "name")] = p
	}
	if !slices.Contains(portNumbers(ports), 4318) {
		t.Errorf("container ports %v: want 4318", ports)
	}
	for _, probe := range []struct{ name, path string }{
		{"livenessProbe", "/healthz"},
		{"readinessProbe", "/readyz"},
	} {
		if got := str(c, probe.name, "httpGet", "path"); got != probe.path {
			t.Errorf("%s path = %q, want %q", probe.name, got, probe.path)
		}
		port := dig(c, probe.name, "httpGet", "port")
		if name, ok := port.(string); ok {
			if _, ok := ports[name]; !ok {
				t.Errorf("%s port %q names no container port", probe.name, name)
			}
		} else if port != 4318 {
			t.Errorf("%s port = %v, want the 4318 port", probe.name, port)
		}
	}
	if target := str(svc, "spec", "ports", 0, "targetPort"); target != "" {
		if _, ok := ports[target]; !ok {
			t.Errorf("Service targetPort %q names no container port", target)
		}
	}
	for _, kind := range []string{"requests", "limits"} {
		for _, res := range []string{"cpu", "memory"} {
			if dig(c, "resources", kind, res) == nil {
				t.Errorf("container resources.%s.%s missing", kind, res)
			}
		}
	}
	if dig(dep, "spec", "template", "spec", "securityContext", "runAsNonRoot") != true {
		t.Errorf("pod securityContext.runAsNonRoot is not true")
	}
	if uid, _ := dig(dep, "spec", "template", "spec", "securityContext", "runAsUser").(int); uid == 0 {
		t.Errorf("pod runAsUser = %v, want a non-zero uid", dig(dep, "spec", "template", "spec", "securityContext", "runAsUser"))
	}

	// Names that refer to other objects must exist.
	secretName := str(c, "envFrom", 0, "secretRef", "name")
	if secretName != byKind["Secret"][0].name() {
		t.Errorf("envFrom secretRef %q, but the Secret is named %q", secretName, byKind["Secret"][0].name())
	}
	cm := byKind["ConfigMap"][0]
	mounted := false
	volumes, _ := dig(dep, "spec", "template", "spec", "volumes").([]any)
	for i := range volumes {
		if name := str(volumes[i], "configMap", "name"); name != "" {
			mounted = true
			if name != cm.name() {
				t.Errorf("volume %s mounts ConfigMap %q, but the ConfigMap is named %q", str(volumes[i], "name"), name, cm.name())
			}
		}
	}
	if !mounted {
		t.Errorf("the ConfigMap is not mounted")
	}
	args, _ := dig(c, "args").([]any)
	configArg := ""
	for i, a := range args {
		if a == "--config" && i+1 < len(args) {
			configArg = fmt.Sprint(args[i+1])
		}
	}
	var tallyYAML map[string]any
	if err := yaml.Unmarshal([]byte(str(cm.obj, "data", filepath.Base(configArg))), &tallyYAML); err != nil || len(tallyYAML) == 0 {
		t.Errorf("ConfigMap key %q (from --config %q): not a YAML map (%v)", filepath.Base(configArg), configArg, err)
	}
	if str(tallyYAML, "listen") != "0.0.0.0:4318" {
		t.Errorf("tally.yaml listen = %q, want 0.0.0.0:4318", str(tallyYAML, "listen"))
	}
}

func TestKustomizationListsEveryManifest(t *testing.T) {
	var k struct {
		Resources []string `yaml:"resources"`
	}
	readYAML(t, "kubernetes/kustomization.yaml", &k)
	files, _ := filepath.Glob("kubernetes/*.yaml")
	var want []string
	for _, f := range files {
		if b := filepath.Base(f); b != "kustomization.yaml" {
			want = append(want, b)
		}
	}
	got := slices.Clone(k.Resources)
	sort.Strings(got)
	if !slices.Equal(got, want) {
		t.Errorf("kustomization resources %v, files %v", got, want)
	}
}

// ----------------------------------------------------- clickhouse cluster

type xmlRemoteServers struct {
	RemoteServers struct {
		Clusters []xmlCluster `xml:",any"`
	} `xml:"remote_servers"`
	DDLPath string `xml:"distributed_ddl>path"`
}

type xmlCluster struct {
	XMLName xml.Name
	Shards  []struct {
		InternalReplication bool `xml:"internal_replication"`
		Replicas            []struct {
			Host string `xml:"host"`
			Port int    `xml:"port"`
		} `xml:"replica"`
	} `xml:"shard"`
}

type xmlMacros struct {
	Shard   string `xml:"macros>shard"`
	Replica string `xml:"macros>replica"`
}

type xmlZooKeeper struct {
	Nodes []struct {
		Host string `xml:"host"`
		Port int    `xml:"port"`
	} `xml:"zookeeper>node"`
}

func readXML(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func TestClickHouseClusterConfig(t *testing.T) {
	var rs xmlRemoteServers
	readXML(t, "clickhouse-cluster/remote_servers.xml", &rs)
	clusters := rs.RemoteServers.Clusters
	if len(clusters) != 1 || clusters[0].XMLName.Local != "tally" {
		t.Fatalf("remote_servers: want one cluster named tally, have %+v", clusters)
	}
	if rs.DDLPath == "" {
		t.Errorf("no distributed_ddl path: ON CLUSTER DDL would not run")
	}
	cluster := clusters[0]
	if len(cluster.Shards) != 2 {
		t.Fatalf("want 2 shards, have %d", len(cluster.Shards))
	}
	// host → shard number (1-based, as the macros number them).
	hostShard := map[string]string{}
	for i, s := range cluster.Shards {
		if !s.InternalReplication {
			t.Errorf("shard %d: internal_replication must be true with Replicated tables", i+1)
		}
		if len(s.Replicas) != 2 {
			t.Errorf("shard %d: want 2 replicas, have %d", i+1, len(s.Replicas))
		}
		for _, r := range s.Replicas {
			if r.Host == "" || r.Port == 0 {
				t.Errorf("shard %d: replica without host or port", i+1)
			}
			hostShard[r.Host] = strconv.Itoa(i + 1)
		}
	}

	files, _ := filepath.Glob("clickhouse-cluster/macros-*.xml")
	if len(files) != 4 {
		t.Fatalf("want 4 macros files (one per node), have %v", files)
	}
	seen := map[string]bool{}
	for _, f := range files {
		var m xmlMacros
		readXML(t, f, &m)
		if seen[m.Replica] {
			t.Errorf("%s: replica name %q used twice", f, m.Replica)
		}
		seen[m.Replica] = true
		// The node's replica macro is its host's first label; that host must
		// sit in remote_servers under the shard its {shard} macro names.
		var host string
		for h := range hostShard {
			if strings.SplitN(h, ".", 2)[0] == m.Replica {
				host = h
			}
		}
		if host == "" {
			t.Errorf("%s: replica %q is no host of remote_servers", f, m.Replica)
		} else if hostShard[host] != m.Shard {
			t.Errorf("%s: {shard}=%s, but host %s is in shard %s of remote_servers", f, m.Shard, host, hostShard[host])
		}
	}

	var zk xmlZooKeeper
	readXML(t, "clickhouse-cluster/zookeeper.xml", &zk)
	if n := len(zk.Nodes); n < 3 || n%2 == 0 {
		t.Errorf("zookeeper: %d nodes; want an odd ensemble of at least 3", n)
	}
}

// ---------------------------------------------------------------- systemd

func TestSystemdUnitVerifies(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatalf("systemd-analyze not found; "+installHint, "systemd")
	}
	unit, err := os.ReadFile("systemd/tally.service")
	if err != nil {
		t.Fatal(err)
	}
	// verify checks that ExecStart's binary exists and loads the unit's
	// dependencies (sysinit.target…), so it runs against a private root
	// holding the unit, a stand-in executable and the system's unit files.
	root := t.TempDir()
	for _, dir := range []string{"etc/systemd/system", "usr/local/bin", "usr/lib/systemd"} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "etc/systemd/system/tally.service"), unit, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "usr/local/bin/tally"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-r", "/usr/lib/systemd/system", filepath.Join(root, "usr/lib/systemd/")).CombinedOutput(); err != nil {
		t.Fatalf("copy system units: %v\n%s", err, out)
	}
	// verify exits 0 on unknown keys and bad values (it only warns), so any
	// output at all is a failure.
	out, err := exec.Command(analyze, "verify", "--root="+root, "tally.service").CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}

	// The hardening, as systemd scores it (0 = fully confined, 10 = none;
	// 2.0 and below is "OK"): a regression in the sandbox shows here.
	out, err = exec.Command(analyze, "security", "--offline=true", "--root="+root, "tally.service").CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze security: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`Overall exposure level for tally\.service: ([0-9.]+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("systemd-analyze security: no exposure level in\n%s", out)
	}
	if level, _ := strconv.ParseFloat(string(m[1]), 64); level > 2.0 {
		t.Errorf("exposure level %.1f, want at most 2.0:\n%s", level, out)
	}
}

func TestSystemdUnitSettings(t *testing.T) {
	settings := map[string][]string{}
	f, err := os.Open("systemd/tally.service")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			settings[k] = append(settings[k], v)
		}
	}
	want := map[string]string{
		"DynamicUser": "yes", "ProtectSystem": "strict", "StateDirectory": "tally",
		"NoNewPrivileges": "yes", "ProtectHome": "yes", "PrivateTmp": "yes",
	}
	for k, v := range want {
		if !slices.Contains(settings[k], v) {
			t.Errorf("%s=%s missing (have %q)", k, v, settings[k])
		}
	}
	if exec := strings.Join(settings["ExecStart"], " "); !strings.Contains(exec, "tally serve") ||
		!strings.Contains(exec, "--data-dir /var/lib/tally") {
		t.Errorf("ExecStart=%s: want tally serve with --data-dir in the StateDirectory", exec)
	}
}

// ------------------------------------------------------------- Dockerfile

// instruction is one Dockerfile instruction with its continuation lines joined.
type instruction struct {
	cmd  string // upper case
	args string
}

func parseDockerfile(t *testing.T, path string) []instruction {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []instruction
	var cur strings.Builder
	for _, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur.WriteString(strings.TrimSuffix(trimmed, "\\") + " ")
			continue
		}
		cur.WriteString(trimmed)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{strings.ToUpper(cmd), strings.TrimSpace(args)})
		cur.Reset()
	}
	return out
}

func TestDockerfile(t *testing.T) {
	ins := parseDockerfile(t, "Dockerfile")
	type stage struct {
		image, name string
		body        []instruction
	}
	var stages []stage
	for _, in := range ins {
		if in.cmd == "FROM" {
			fields := strings.Fields(in.args)
			s := stage{image: fields[0]}
			if len(fields) == 3 && strings.EqualFold(fields[1], "AS") {
				s.name = fields[2]
			}
			stages = append(stages, s)
			continue
		}
		if len(stages) == 0 {
			t.Fatalf("%s before the first FROM", in.cmd)
		}
		stages[len(stages)-1].body = append(stages[len(stages)-1].body, in)
	}
	if len(stages) < 2 {
		t.Fatalf("want a multi-stage build, have %d stage(s)", len(stages))
	}
	build, final := stages[0], stages[len(stages)-1]
	if !strings.HasPrefix(build.image, "golang:1.26") {
		t.Errorf("build stage FROM %s, want golang:1.26", build.image)
	}
	built := false
	for _, in := range build.body {
		if in.cmd == "RUN" && strings.Contains(in.args, "go build") {
			built = true
			for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "./cmd/tally"} {
				if !strings.Contains(in.args, want) {
					t.Errorf("go build %q: missing %s", in.args, want)
				}
			}
		}
	}
	if !built {
		t.Errorf("build stage has no RUN go build")
	}
	if !strings.Contains(final.image, "distroless/static") && final.image != "scratch" {
		t.Errorf("final stage FROM %s, want distroless/static or scratch", final.image)
	}

	names := map[string]bool{}
	for _, s := range stages {
		names[s.name] = s.name != ""
	}
	user, exposed, healthcheck := "", false, false
	for _, in := range final.body {
		switch in.cmd {
		case "USER":
			user = in.args
		case "EXPOSE":
			exposed = exposed || slices.Contains(strings.Fields(in.args), "4318")
		case "HEALTHCHECK":
			healthcheck = strings.Contains(in.args, "probe")
		case "COPY":
			for _, f := range strings.Fields(in.args) {
				if from, ok := strings.CutPrefix(f, "--from="); ok && !names[from] {
					t.Errorf("COPY --from=%s: no stage of that name", from)
				}
			}
		}
	}
	uid, _, _ := strings.Cut(user, ":")
	if user == "" || uid == "0" || uid == "root" {
		t.Errorf("final stage USER %q, want a non-root user", user)
	}
	if !exposed {
		t.Errorf("final stage does not EXPOSE 4318")
	}
	if !healthcheck {
		t.Errorf("final stage has no HEALTHCHECK through `tally probe`")
	}
	for _, in := range ins {
		if in.cmd == "ADD" && regexp.MustCompile(`(?i)\b(https?|git)://|git@`).MatchString(in.args) {
			t.Errorf("ADD of a remote source %q: fetch in a RUN step with a checksum, or COPY", in.args)
		}
	}
}

// ---------------------------------------------------------------- helpers

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// subset reports whether every key of sub has the same value in super.
func subset(sub, super map[string]string) bool {
	for k, v := range sub {
		if super[k] != v {
			return false
		}
	}
	return true
}

// portNumbers lists the numbers of named ports.
func portNumbers(m map[string]int) []int {
	out := make([]int, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
