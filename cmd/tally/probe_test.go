package main

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestProbe(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz":
			w.WriteHeader(http.StatusOK)
		case "/readyz":
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer srv.Close()

	tests := []struct {
		name     string
		args     []string
		wantCode int // 0 = success
	}{
		{"healthz by default", []string{"--url", srv.URL}, 0},
		{"readyz answering 503", []string{"readyz", "--url", srv.URL}, 1},
		{"nothing listening", []string{"--url", "http://127.0.0.1:1"}, 1},
		{"unknown endpoint", []string{"metrics", "--url", srv.URL}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := newProbeCmd()
			cmd.SetArgs(tc.args)
			var out bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			err := cmd.Execute()
			code := 0
			if err != nil {
				code = exitCode(err)
				var e *exitError
				if !errors.As(err, &e) {
					code = 2
				}
			}
			if code != tc.wantCode {
				t.Errorf("exit code %d (err %v), want %d", code, err, tc.wantCode)
			}
		})
	}
}
