//go:build linux

package wsconn

import (
	"io"
	"net"
	"sync/atomic"
	"syscall"
)

// NewListener wraps ln so that the poller can read TLS sessions over its
// connections without a goroutine each: wrap before tls.NewListener.
// Connections stay ordinary blocking ones (net/http reads the handshake and
// the upgrade request through them) until the poller takes one over.
func NewListener(ln net.Listener) net.Listener { return &listener{ln} }

type listener struct{ net.Listener }

func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c, nil
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return c, nil
	}
	return &sockConn{TCPConn: tc, raw: raw}, nil
}

// sockConn is a TCP connection whose reads the poller can switch to
// non-blocking: a TLS session above it then reads whatever has arrived and
// gets errWouldBlock instead of waiting. crypto/tls keeps a partial record
// across temporary errors, so the next read, when epoll reports more data,
// continues where it stopped.
type sockConn struct {
	*net.TCPConn
	raw      syscall.RawConn
	nonblock atomic.Bool
}

func (s *sockConn) Read(p []byte) (int, error) {
	if !s.nonblock.Load() {
		return s.TCPConn.Read(p)
	}
	n, err := readRaw(s.raw, p)
	switch {
	case isWouldBlock(err):
		return 0, errWouldBlock
	case err != nil:
		return 0, err
	case n == 0 && len(p) > 0:
		return 0, io.EOF
	}
	return n, nil
}

// errWouldBlock is a temporary net.Error: "nothing to read yet".
var errWouldBlock net.Error = wouldBlock{}

type wouldBlock struct{}

func (wouldBlock) Error() string   { return "websocket: no data to read yet" }
func (wouldBlock) Timeout() bool   { return true }
func (wouldBlock) Temporary() bool { return true }
