package receiver

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// slowClient opens a real TCP connection to srv, sends the headers of a
// POST declaring contentLength bytes with the given key, and then trickles
// one byte of body every interval until the connection fails or stop is
// closed. It returns the connection, to read the answer from.
func slowClient(t *testing.T, srv *httptest.Server, key string, contentLength int, interval time.Duration, stop <-chan struct{}) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	head := fmt.Sprintf("POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: %s\r\n"+
		"Authorization: Bearer %s\r\nContent-Length: %d\r\n\r\n", contentProtobuf, key, contentLength)
	if _, err := conn.Write([]byte(head)); err != nil {
		t.Fatalf("write headers: %v", err)
	}
	go func() {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for range contentLength {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if _, err := conn.Write([]byte{0}); err != nil {
				return
			}
		}
	}()
	return conn
}

// tenants authenticates "Bearer slow" as project slow and anything else as
// project fast, telling on authenticated when a slow request has started.
func tenants(authenticated chan<- struct{}) Authenticator {
	return authFunc(func(r *http.Request) (string, error) {
		if r.Header.Get("Authorization") == "Bearer slow" {
			authenticated <- struct{}{}
			return "slow", nil
		}
		return "fast", nil
	})
}

func TestSlowTenantCannotStarveOthers(t *testing.T) {
	// The attack: connections declaring 16 MB bodies (4 of them are
	// twice the default 32 MiB budget) and trickling bytes. The rate check
	// is off here, so the slow bodies stay in flight for the whole test:
	// only reserving bytes as they arrive keeps the budget for others.
	const slowConns = 4
	authenticated := make(chan struct{}, slowConns)
	s := &sink{}
	h := New(Config{MinBodyRate: -1}, fakeNormalize, s, tenants(authenticated), nil, nil)
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer srv.CloseClientConnections() // the slow bodies would never end
	stop := make(chan struct{})
	defer close(stop)
	for range slowConns {
		slowClient(t, srv, "slow", 16<<20-1, 20*time.Millisecond, stop)
	}
	for range slowConns {
		select {
		case <-authenticated:
		case <-time.After(10 * time.Second):
			t.Fatal("the slow requests did not reach the receiver")
		}
	}
	time.Sleep(100 * time.Millisecond) // let the slow bodies start arriving

	body := protoBody(t, traces("fast"))
	for i := range 20 {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/traces", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", contentProtobuf)
		req.Header.Set("Authorization", "Bearer fast")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d of the other tenant: %d, want 200 while the slow tenant trickles", i, resp.StatusCode)
		}
	}
	if got := len(s.spans()); got != 20 {
		t.Errorf("sink got %d spans, want 20", got)
	}
}

func TestSlowBodyTimedOut(t *testing.T) {
	// A body arriving slower than MinBodyRate after the grace period is
	// answered 408 and its connection closed; one at the rate is served.
	// The bound on how long the slow one takes is generous (the check is
	// due after 0.2 s): it only tells "cut" from "never cut".
	const bound = 5 * time.Second
	tests := []struct {
		name     string
		size     int
		interval time.Duration // between bytes
		want     int
	}{
		{"one byte every 50 ms", 16 << 20, 50 * time.Millisecond, http.StatusRequestTimeout},
		{"one byte every 5 s", 16 << 20, 5 * time.Second, http.StatusRequestTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			authenticated := make(chan struct{}, 1)
			h := New(Config{MinBodyRate: 1000, BodyRateGrace: 200 * time.Millisecond}, fakeNormalize, &sink{},
				tenants(authenticated), nil, nil)
			srv := httptest.NewServer(h)
			defer srv.Close()
			defer srv.CloseClientConnections()
			stop := make(chan struct{})
			defer close(stop)
			start := time.Now()
			conn := slowClient(t, srv, "slow", tt.size, tt.interval, stop)
			conn.SetReadDeadline(start.Add(bound))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no answer within %s: %v", bound, err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.want)
			}
			if !resp.Close {
				t.Errorf("answer does not close the connection")
			}
		})
	}
}

func TestBodyAtMinRateServed(t *testing.T) {
	// A 24 KiB body in 1 KiB pieces every 20 ms (about 50 KB/s) passes a
	// 10 KB/s minimum, well past the grace period.
	s := &sink{}
	h := New(Config{MinBodyRate: 10000, BodyRateGrace: 100 * time.Millisecond}, fakeNormalize, s, nil, nil, nil)
	srv := httptest.NewServer(h)
	defer srv.Close()
	body := paddedBody(t, 24<<10)
	pr := &pacedReader{data: body, piece: 1 << 10, every: 20 * time.Millisecond}
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/traces", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = int64(len(body))
	req.Header.Set("Content-Type", contentProtobuf)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, want 200", resp.StatusCode)
	}
	if got := len(s.spans()); got != 1 {
		t.Errorf("sink got %d spans, want 1", got)
	}
}

// pacedReader yields data piece bytes at a time, waiting every between
// pieces.
type pacedReader struct {
	mu    sync.Mutex
	data  []byte
	piece int
	every time.Duration
}

func (p *pacedReader) Read(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.data) == 0 {
		return 0, io.EOF
	}
	time.Sleep(p.every)
	n := copy(b[:min(len(b), p.piece)], p.data)
	p.data = p.data[n:]
	return n, nil
}
