package wsconn

import (
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"
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
	srv     *conns // the poller serving it; nil before Serve
	sendTTL time.Duration
	// svc is held by whoever uses c's frame reader: the epoll worker or
	// goroutine reading c, and the start of a linger letting go of an
	// unfinished message. It also orders each epoll worker's reads of c
	// after the previous worker's in the memory model, not only through
	// the kernel.
	svc sync.Mutex

	closing atomic.Bool
	// lingering is set while our close frame is queued or written and the
	// peer may still send (see linger.go); cut when Close ends it early.
	lingering, cut atomic.Bool
	// violation is the peer's protocol violation that our close frame
	// answers, reported by OnClose when the linger ends; guarded by svc.
	violation  error
	lastActive atomic.Int64 // unix nanoseconds of the last complete frame
	// msgStart is when the unfinished message began to arrive (unix
	// nanoseconds, 0 when none is unfinished), msgBytes what has arrived
	// since, held the bytes of it counted in the poller's total.
	msgStart, msgBytes, held atomic.Int64

	wmu      sync.Mutex
	wq       []outFrame // guarded by wmu
	wqBytes  int        // guarded by wmu
	writing  bool       // a writer drains wq; guarded by wmu
	wdead    bool       // the socket failed or was shut down for writes; guarded by wmu
	wlast    bool       // the last frame (our close) is queued; guarded by wmu
	released bool       // the poller is done with the socket; guarded by wmu
	// lingerTimer ends the linger after our close frame; guarded by wmu.
	lingerTimer *time.Timer

	// Value is for the handler's own per-connection state.
	Value any
}

// RemoteAddr is the peer's address.
func (c *Conn) RemoteAddr() net.Addr { return c.nc.RemoteAddr() }

// WriteMessage queues a copy of p as one binary message and returns at
// once: it never waits for the peer. A message that the peer does not take
// within the poller's send timeout, or that does not fit in the
// connection's queue, closes the connection, so a peer that stops reading
// can neither hold a sender nor make the server hold what is sent to it.
func (c *Conn) WriteMessage(p []byte) error { return c.WriteOwned(append([]byte(nil), p...)) }

// WriteOwned is WriteMessage without the copy: p is handed over and must
// not be used by the caller afterwards.
func (c *Conn) WriteOwned(p []byte) error {
	return c.enqueue(outFrame{op: opBinary, p: p, timeout: c.sendTTL}, false)
}

// closeTimeout bounds the write of a close frame or a pong.
const closeTimeout = time.Second

// closeFrame queues a close frame with code and reason, best effort: the
// connection is being torn down either way.
func (c *Conn) closeFrame(code int, reason string, last bool) error {
	return c.enqueue(outFrame{op: opClose, p: closePayload(code, reason), timeout: closeTimeout, last: last}, true)
}

func closePayload(code int, reason string) []byte {
	if len(reason) > 123 {
		reason = reason[:123]
		for len(reason) > 0 && !utf8.ValidString(reason) {
			reason = reason[:len(reason)-1] // cut on a rune boundary
		}
	}
	p := binary.BigEndian.AppendUint16(make([]byte, 0, 2+len(reason)), uint16(code))
	return append(p, reason...)
}

// Close ends the connection without a close frame, or ends the linger
// after one (see CloseWith); the handler's OnClose follows, once. Safe to
// call any number of times from any goroutine.
func (c *Conn) Close() error {
	if !c.closing.CompareAndSwap(false, true) {
		c.cutLinger()
		return nil
	}
	return c.terminate()
}

// terminate ends the socket's traffic so that its reader sees the end.
func (c *Conn) terminate() error {
	if c.raw != nil {
		// The poller owns the descriptor. A shut-down socket reads as EOF,
		// which wakes the worker that then delivers OnClose and closes it:
		// closing it here could race that worker.
		return c.shutdown()
	}
	return c.nc.Close()
}

// CloseWith sends a close frame with code and reason, then closes: the
// frame is queued behind what was sent before and written within a
// second; the connection then lingers (see linger.go) until the peer
// closes its side or Options.CloseLinger passes, and OnClose follows.
func (c *Conn) CloseWith(code int, reason string) error {
	if !c.closing.CompareAndSwap(false, true) {
		return nil
	}
	c.lingering.Store(true)
	if err := c.closeFrame(code, reason, true); err != nil {
		c.lingering.Store(false)
		return c.terminate()
	}
	return nil
}

// touch records activity for the idle timeout.
func (c *Conn) touch() { c.lastActive.Store(time.Now().UnixNano()) }

// consume parses newly read bytes and dispatches what they complete. It
// returns errPeerClosed after a close frame, a *ProtocolError for a
// violation that ends the connection now, or nil. A violation is answered
// with its close code; the connection then lingers like one we close
// (see linger.go) and OnClose reports the violation when the peer has
// gone. c.svc is held.
func (c *Conn) consume(data []byte) error {
	n := len(data)
	err := c.r.feed(data, c.dispatch)
	c.track(n)
	var pe *ProtocolError
	if errors.As(err, &pe) {
		if c.lingerAfterViolation(err, pe) {
			return nil
		}
		_ = c.closeFrame(pe.Code, pe.Reason, false)
	}
	return err
}

// lingerAfterViolation queues the close frame that answers the peer's
// violation err (pe) as our last and lingers after it; false when the
// connection is closing already or the frame cannot be queued, in which
// case it ends now. c.svc is held.
func (c *Conn) lingerAfterViolation(err error, pe *ProtocolError) bool {
	if !c.closing.CompareAndSwap(false, true) {
		return false
	}
	c.lingering.Store(true)
	c.violation = err
	if c.closeFrame(pe.Code, pe.Reason, true) != nil {
		c.lingering.Store(false)
		c.violation = nil
		return false
	}
	return true
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
		// p is only valid during this call: the pong gets a copy.
		_ = c.enqueue(outFrame{op: opPong, p: append([]byte(nil), p...), timeout: closeTimeout}, true)
	case opClose:
		if err := checkClosePayload(p); err != nil {
			return err
		}
		code := CloseNormal
		if len(p) >= 2 {
			code = int(binary.BigEndian.Uint16(p))
		}
		_ = c.closeFrame(code, "", false)
		return errPeerClosed
	}
	return nil
}

// checkClosePayload checks a peer's close frame (RFC 6455 §5.5.1, §7.4):
// empty, or a code that may be sent followed by a UTF-8 reason.
func checkClosePayload(p []byte) error {
	switch {
	case len(p) == 0:
		return nil
	case len(p) == 1:
		return protoErr(CloseProtocolError, "close frame with a 1-byte payload (a code takes 2)")
	}
	if code := int(binary.BigEndian.Uint16(p)); !sendableCloseCode(code) {
		return protoErr(CloseProtocolError, "close code %d may not be sent", code)
	}
	if !utf8.Valid(p[2:]) {
		return protoErr(CloseInvalidData, "close reason is not valid UTF-8")
	}
	return nil
}

// sendableCloseCode reports whether code may appear in a close frame
// (RFC 6455 §7.4 and the IANA registry): 1004, 1005, 1006 and 1015 are
// reserved; 1000–1003 and 1007–1014 are defined; 3000–4999 are for
// libraries, frameworks and applications.
func sendableCloseCode(code int) bool {
	switch {
	case code >= 1000 && code <= 1003, code >= 1007 && code <= 1014:
		return true
	default:
		return code >= 3000 && code <= 4999
	}
}
