package replay

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	b, err := os.ReadFile("testdata/expected_fixture.json")
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(b)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	again, err := f.MarshalDeterministic()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, b) {
		t.Errorf("parse then marshal changed the bytes:\n%s", again)
	}

	tests := []struct {
		name, doc, wantErr string
	}{
		{"future version", `{"format":"tally.replay/v2","calls":[]}`, `unsupported format "tally.replay/v2": this build reads "tally.replay/v1"`},
		{"no format", `{"calls":[]}`, `not a tally replay fixture (no "format" field)`},
		{"unknown field", `{"format":"tally.replay/v1","calls":[],"exported_at":"now"}`, `unknown field "exported_at"`},
		{"call without tool", `{"format":"tally.replay/v1","calls":[{"seq":1}]}`, `call 0 (seq 1) has no tool`},
		{"not JSON", `nope`, `parse fixture`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Parse error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestLoadNamesThePath(t *testing.T) {
	_, err := Load("testdata/does-not-exist.json")
	if err == nil || !strings.Contains(err.Error(), "does-not-exist.json") {
		t.Errorf("Load error = %v", err)
	}
}
