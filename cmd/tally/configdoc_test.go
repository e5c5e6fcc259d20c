package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite docs/configuration.md from the flag definitions")

// TestConfigurationDocIsCurrent fails when docs/configuration.md no longer
// says what the flags are: regenerate it with `make docs`.
func TestConfigurationDocIsCurrent(t *testing.T) {
	var got bytes.Buffer
	if err := writeConfigurationDoc(&got, newRootCmd()); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", configurationDocPath)
	if *updateDocs {
		if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: generate it with `make docs`", err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		g, w := strings.Split(got.String(), "\n"), strings.Split(string(want), "\n")
		for i := range max(len(g), len(w)) {
			var gl, wl string
			if i < len(g) {
				gl = g[i]
			}
			if i < len(w) {
				wl = w[i]
			}
			if gl != wl {
				t.Fatalf("%s is stale (first difference at line %d):\n  doc:   %.200s\n  flags: %.200s\nregenerate it with `make docs`", configurationDocPath, i+1, wl, gl)
			}
		}
	}
	// Every serve flag is in it, with its environment variable.
	for _, name := range []string{"--retention", "--content-retention", "--wal-dead-letter-attempts", "--max-span-age"} {
		if !strings.Contains(got.String(), "`"+name+"`") {
			t.Errorf("%s does not document %s", configurationDocPath, name)
		}
	}
	if !strings.Contains(got.String(), "`TALLY_WAL_DEAD_LETTER_ATTEMPTS`") {
		t.Errorf("%s does not give serve's environment variables", configurationDocPath)
	}
}
