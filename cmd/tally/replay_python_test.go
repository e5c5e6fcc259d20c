package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tallyhq/tally/internal/tallytest"
	"github.com/tallyhq/tally/replay"
)

// demoRetriedRun is the demo run (tally demo --runs 40 --seed 1) whose
// fixture is replay/testdata/demo_fixture.json: a rate-limited web_search
// retried with success.
const demoRetriedRun = "c8e736dea0307c62e3d0cce802b84730"

// pythonWithPytest finds a python3 that imports pytest: python3 on PATH,
// else Debian's /usr/bin/python3 (where python3-pytest installs when PATH's
// python3 is a pyenv or venv one).
func pythonWithPytest() (string, bool) {
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(py, "-c", "import pytest").Run() == nil {
			return py, true
		}
	}
	return "", false
}

// TestReplayInPython is the Python client end to end: tally demo → tally
// replay export → clients/python/examples/test_replay_agent.py replays the
// exported run through a small agent loop with the tally_replay pytest
// plugin, clean and then with a timeout on the first call, asserting the
// agent retried it.
func TestReplayInPython(t *testing.T) {
	py, ok := pythonWithPytest()
	if !ok {
		t.Fatal("python3 with pytest is needed: run scripts/test-deps.sh (apt-get install python3-pytest)")
	}
	tally := tallytest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := runCLI(ctx, &out, "demo", "--endpoint", tally.URL, "--runs", "40", "--seed", "1",
		"--end", "2025-06-02T09:00:00Z"); err != nil {
		t.Fatalf("tally demo: %v\n%s", err, out.String())
	}
	fixture := filepath.Join(t.TempDir(), "demo.fixture.json")
	out.Reset()
	// The 8-character prefix, as a user copies it from the UI.
	if err := runCLI(ctx, &out, "replay", "export", demoRetriedRun[:8], "-o", fixture, "--server", tally.URL); err != nil {
		t.Fatalf("tally replay export: %v\n%s", err, out.String())
	}
	f, err := replay.Load(fixture)
	if err != nil {
		t.Fatal(err)
	}
	if f.Run.TraceID != demoRetriedRun || len(f.Calls) == 0 {
		t.Fatalf("exported run %s with %d calls, want %s with calls", f.Run.TraceID, len(f.Calls), demoRetriedRun)
	}

	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, py, "-m", "pytest", "-v", "-p", "no:cacheprovider",
		filepath.Join("clients", "python", "examples", "test_replay_agent.py"))
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "TALLY_FIXTURE="+fixture, "PYTHONDONTWRITEBYTECODE=1")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("pytest: %v\n%s", err, b)
	}
	for _, name := range []string{"test_replays_clean PASSED", "test_retries_a_timeout_on_the_first_call PASSED"} {
		if !strings.Contains(string(b), name) {
			t.Errorf("pytest output lacks %q:\n%s", name, b)
		}
	}
}
