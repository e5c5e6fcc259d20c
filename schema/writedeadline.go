package schema

import (
	"context"
	"net"
	"sync/atomic"
	"syscall"
	"time"
)

// DefaultWriteTimeout is Config.WriteTimeout unless set: the writer's
// INSERT timeout, so a server that stops reading fails an INSERT's block
// about when the INSERT would have timed out anyway.
const DefaultWriteTimeout = 30 * time.Second

// deadlineConn is a server connection whose writes fail after timeout
// when its user set no deadline. clickhouse-go sets deadlines around a
// query and its Send, but none while Flush sends an INSERT's blocks
// (Insert.Append): without this a server that stopped reading would hold
// the writer until the kernel gave up on the connection, many minutes
// later.
type deadlineConn struct {
	net.Conn
	timeout time.Duration
	own     atomic.Bool // the user set a deadline: writes keep it
}

// dialDeadline dials addr for clickhouse-go (Options.DialContext) and
// wraps the connection so that every write is bounded by timeout.
func dialDeadline(dialTimeout, timeout time.Duration) func(ctx context.Context, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: dialTimeout}
	return func(ctx context.Context, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		return &deadlineConn{Conn: c, timeout: timeout}, nil
	}
}

// SyscallConn is the TCP connection's: clickhouse-go checks a pooled
// connection for a closed peer through it before reuse.
func (c *deadlineConn) SyscallConn() (syscall.RawConn, error) {
	return c.Conn.(syscall.Conn).SyscallConn()
}

func (c *deadlineConn) Write(p []byte) (int, error) {
	if !c.own.Load() {
		if err := c.Conn.SetWriteDeadline(time.Now().Add(c.timeout)); err != nil {
			return 0, err
		}
	}
	return c.Conn.Write(p)
}

func (c *deadlineConn) SetDeadline(t time.Time) error {
	c.own.Store(!t.IsZero())
	return c.Conn.SetDeadline(t)
}

func (c *deadlineConn) SetWriteDeadline(t time.Time) error {
	c.own.Store(!t.IsZero())
	return c.Conn.SetWriteDeadline(t)
}
