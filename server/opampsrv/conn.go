package opampsrv

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync/atomic"
)

// errMessageTooLarge ends a connection whose next message exceeds the bound.
var errMessageTooLarge = errors.New("opamp message exceeds the size limit")

// limitConn bounds how many bytes may be read before the next complete
// message resets the budget. opamp-go reads WebSocket messages whole and
// without a limit; this is where we bound them.
type limitConn struct {
	net.Conn
	limit int64
	read  atomic.Int64
}

func (c *limitConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if c.read.Add(int64(n)) > c.limit {
		return n, errMessageTooLarge
	}
	return n, err
}

// resetBudget is called after each complete message.
func (c *limitConn) resetBudget() { c.read.Store(0) }

type limitListener struct {
	net.Listener
	limit int64
}

func (l *limitListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &limitConn{Conn: c, limit: l.limit}, nil
}

type rawConnKey struct{}

// rawConnContext stores the accepted connection (below TLS) in the request context.
func rawConnContext(ctx context.Context, c net.Conn) context.Context {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if lc, ok := c.(*limitConn); ok {
		return context.WithValue(ctx, rawConnKey{}, lc)
	}
	return ctx
}

func rawConnFrom(ctx context.Context) *limitConn {
	lc, _ := ctx.Value(rawConnKey{}).(*limitConn)
	return lc
}
