package query

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
)

func TestCursor(t *testing.T) {
	runID := strings.Repeat("a", 32)
	for _, c := range []struct {
		name string
		in   cursor
	}{
		{"run", cursor{1700000000000000000, runID}},
		{"conversation id with a colon", cursor{42, "conv:1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := decodeCursor(c.in.encode())
			if err != nil || got != c.in {
				t.Errorf("round trip of %+v: %+v, %v", c.in, got, err)
			}
		})
	}
	for _, raw := range []string{"not base64!", b64("12"), b64("12:"), b64("x:conv"), b64("-1:conv")} {
		if _, err := decodeCursor(raw); err == nil {
			t.Errorf("decodeCursor(%q): no error", raw)
		}
	}
	// The run list's tie-breaker is a trace id: 32 hex characters. The check
	// comes before any query, so a Reader without a store answers it.
	_, err := NewReader(nil).Runs(context.Background(), RunFilter{Project: "p", Cursor: cursor{42, "conv-1"}.encode()})
	if err == nil || !strings.Contains(err.Error(), "invalid cursor") {
		t.Errorf("run list with a conversation cursor: %v, want invalid cursor", err)
	}
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
