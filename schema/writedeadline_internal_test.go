package schema

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"
)

// stalledPeer listens on loopback and accepts connections it never reads
// from, as a server that stopped reading mid-INSERT; it closes them at the
// end of the test.
func stalledPeer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu       sync.Mutex
		accepted []net.Conn
		done     = make(chan struct{})
	)
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			accepted = append(accepted, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range accepted {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// fill writes to c until a write fails (the peer's and the kernel's
// buffers hold a few MiB at most) and returns that error.
func fill(c net.Conn) error {
	buf := make([]byte, 1<<20)
	for range 1 << 10 { // 1 GiB: far past any socket buffer
		if _, err := c.Write(buf); err != nil {
			return err
		}
	}
	return nil
}

// TestDeadlineConn: a write to a peer that stopped reading fails once the
// timeout passes when the connection's user set no deadline (without the
// wrapper it would block until the kernel gave up); a deadline the user
// set is kept, and clearing it brings the timeout back.
func TestDeadlineConn(t *testing.T) {
	addr := stalledPeer(t)
	dial := dialDeadline(time.Second, 100*time.Millisecond)
	c, err := dial(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := fill(c); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("write to a stalled peer: %v, want the write deadline exceeded", err)
	}

	long := dialDeadline(time.Second, time.Hour)
	c2, err := long(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	// A deadline already past, set by the user: the hour-long timeout must
	// not replace it.
	if err := c2.SetDeadline(time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Write([]byte("x")); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("write past the user's deadline: %v, want the deadline exceeded", err)
	}

	c3, err := dial(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	if err := c3.SetDeadline(time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := c3.SetDeadline(time.Time{}); err != nil { // cleared, as clickhouse-go does after a query
		t.Fatal(err)
	}
	if err := fill(c3); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("write after the user's deadline was cleared: %v, want the timeout back", err)
	}

	// clickhouse-go checks pooled connections through the raw connection.
	sc, ok := c.(syscall.Conn)
	if !ok {
		t.Fatal("the wrapped connection is not a syscall.Conn: clickhouse-go would skip its check of pooled connections")
	}
	if _, err := sc.SyscallConn(); err != nil {
		t.Fatal(err)
	}
}
