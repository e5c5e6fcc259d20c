package tallytest

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/tallyhq/tally/internal/conformance"
)

// SendScenario posts the usage conformance scenario named name
// (ingest/testdata/conformance) to a tally's /v1/traces as one OTLP
// protobuf request and returns it, failing the test when the scenario is
// missing or the request is not acknowledged.
func SendScenario(t testing.TB, url, name string) *conformance.Scenario {
	t.Helper()
	dir, err := corpusDir()
	if err != nil {
		t.Fatal(err)
	}
	scenarios, err := conformance.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var sc *conformance.Scenario
	for i := range scenarios {
		if scenarios[i].Name == name {
			sc = &scenarios[i]
		}
	}
	if sc == nil {
		t.Fatalf("scenario %s missing from %s", name, dir)
	}
	td, err := sc.Traces()
	if err != nil {
		t.Fatal(err)
	}
	PostTraces(t, url, td)
	return sc
}

// PostTraces sends td to tally at url as one OTLP/HTTP protobuf request
// and fails the test unless it is acknowledged.
func PostTraces(t testing.TB, url string, td ptrace.Traces) {
	t.Helper()
	body, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(url+"/v1/traces", "application/x-protobuf", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /v1/traces: %s", resp.Status)
	}
}

// corpusDir finds ingest/testdata/conformance from the working directory
// (a package directory under go test) upwards.
func corpusDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "ingest", "testdata", "conformance"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}
