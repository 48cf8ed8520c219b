package wsconn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// ErrClosed is returned by writes on a connection that is closing.
var ErrClosed = errors.New("websocket connection closed")

// Conn is one upgraded WebSocket. Writes are safe from any goroutine; reads
// belong to the Poller that serves it.
type Conn struct {
	nc    net.Conn
	raw   syscall.RawConn // set when the poller reads the socket itself (epoll)
	tls   bool            // a TLS session over raw, read through nc
	early []byte          // bytes that arrived with the handshake

	id      uint64
	h       Handler
	r       reader
	sendTTL time.Duration

	wmu        sync.Mutex
	closing    atomic.Bool
	lastActive atomic.Int64 // unix nanoseconds of the last complete frame

	// Value is for the handler's own per-connection state.
	Value any
}

// RemoteAddr is the peer's address.
func (c *Conn) RemoteAddr() net.Addr { return c.nc.RemoteAddr() }

// WriteMessage sends p as one binary message. A write that does not finish
// within the poller's send timeout closes the connection, so a peer that
// stops reading cannot hold a sender.
func (c *Conn) WriteMessage(p []byte) error { return c.write(opBinary, p, c.sendTTL) }

func (c *Conn) write(op byte, p []byte, timeout time.Duration) error {
	if c.closing.Load() {
		return ErrClosed
	}
	var hb [10]byte
	hdr := appendHeader(hb[:0], op, len(p))
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.nc.SetWriteDeadline(time.Now().Add(timeout))
	bufs := net.Buffers{hdr, p}
	if _, err := bufs.WriteTo(c.nc); err != nil {
		_ = c.Close()
		return fmt.Errorf("websocket write to %s: %w", c.nc.RemoteAddr(), err)
	}
	return nil
}

// closeFrame sends a close frame with code and reason, best effort: the
// connection is being torn down either way.
func (c *Conn) closeFrame(code int, reason string) {
	if len(reason) > 123 {
		reason = reason[:123]
	}
	p := binary.BigEndian.AppendUint16(make([]byte, 0, 2+len(reason)), uint16(code))
	_ = c.write(opClose, append(p, reason...), time.Second)
}

// Close ends the connection without a close frame; the handler's OnClose
// follows, once. Safe to call any number of times from any goroutine.
func (c *Conn) Close() error {
	if !c.closing.CompareAndSwap(false, true) {
		return nil
	}
	if c.raw != nil {
		// The poller owns the descriptor. A shut-down socket reads as EOF,
		// which wakes the worker that then delivers OnClose and closes it:
		// closing it here could race that worker.
		return c.shutdown()
	}
	return c.nc.Close()
}

// CloseWith sends a close frame with code and reason, then closes.
func (c *Conn) CloseWith(code int, reason string) error {
	c.closeFrame(code, reason)
	return c.Close()
}

// touch records activity for the idle timeout.
func (c *Conn) touch() { c.lastActive.Store(time.Now().UnixNano()) }

// consume parses newly read bytes and dispatches what they complete. It
// returns errPeerClosed after a close frame, a *ProtocolError for a
// violation (already answered with a close frame), or nil.
func (c *Conn) consume(data []byte) error {
	err := c.r.feed(data, c.dispatch)
	var pe *ProtocolError
	if errors.As(err, &pe) {
		c.closeFrame(pe.Code, pe.Reason)
	}
	return err
}

// errPeerClosed marks a close frame from the peer: a clean end.
var errPeerClosed = errors.New("peer closed the websocket")

func (c *Conn) dispatch(op byte, p []byte) error {
	c.touch()
	switch op {
	case opBinary:
		if !c.closing.Load() {
			c.h.OnMessage(c, p)
		}
	case opPing:
		_ = c.write(opPong, p, time.Second)
	case opClose:
		code := CloseNormal
		if len(p) >= 2 {
			code = int(binary.BigEndian.Uint16(p))
			if !sendableCloseCode(code) {
				code = CloseProtocolError
			}
		}
		c.closeFrame(code, "")
		return errPeerClosed
	}
	return nil
}

// sendableCloseCode reports whether code may appear in a close frame
// (RFC 6455 §7.4): 1005, 1006 and 1015 are reserved for local use.
func sendableCloseCode(code int) bool {
	switch {
	case code >= 1000 && code <= 1003, code >= 1007 && code <= 1011:
		return true
	default:
		return code >= 3000 && code <= 4999
	}
}
