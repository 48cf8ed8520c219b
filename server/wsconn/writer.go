package wsconn

import (
	"errors"
	"fmt"
	"net"
	"time"
)

// ErrQueueFull is returned by a write to a connection whose peer does not
// take what it is sent: its queue is full, and the connection is closed.
var ErrQueueFull = errors.New("websocket send queue full; connection closed")

// Writes never happen on the goroutine that asks for them. A frame is
// queued on its connection, and a writer goroutine, started when the queue
// goes from empty to not empty and ended when it is empty again, hands the
// frames to the socket, each within its own deadline. So a read worker that
// answers a message or a ping never waits for a peer, and an idle
// connection has no writer.
//
// The queue is bounded: beside the frame being written, at most
// Options.MaxQueuedBytes and maxQueuedFrames wait. A frame that does not fit
// closes the connection: a peer that reads slower than it is sent to is
// dropped rather than held in memory.

// maxQueuedFrames bounds the frames waiting on one connection (a ping flood
// from a peer that does not read its pongs).
const maxQueuedFrames = 64

// outFrame is one queued frame.
type outFrame struct {
	op      byte
	p       []byte
	timeout time.Duration
	// last ends the connection once written (a close frame of ours).
	last bool
}

// enqueue queues one frame. control frames (pong, close) are queued even
// while the connection is closing, as long as its socket is open.
func (c *Conn) enqueue(f outFrame, control bool) error {
	if !control && c.closing.Load() {
		return ErrClosed
	}
	c.wmu.Lock()
	if c.wdead || c.wlast || c.released {
		c.wmu.Unlock()
		return ErrClosed
	}
	if len(c.wq) > 0 && (len(c.wq) >= maxQueuedFrames || c.wqBytes+len(f.p) > c.maxQueued()) {
		c.wmu.Unlock()
		if !c.closing.Load() {
			c.srv.debug("websocket send queue full; closing", "remote", c.nc.RemoteAddr())
			c.srv.dropped(DropQueueFull)
		}
		_ = c.Close()
		return fmt.Errorf("%w: %s", ErrQueueFull, c.nc.RemoteAddr())
	}
	c.wq = append(c.wq, f)
	c.wqBytes += len(f.p)
	c.wlast = f.last
	start := !c.writing
	c.writing = true
	c.wmu.Unlock()
	if start {
		if c.srv != nil {
			c.srv.writers.Add(1)
		}
		go c.drain()
	}
	return nil
}

func (c *Conn) maxQueued() int {
	if c.srv == nil {
		return defaultMaxQueuedBytes
	}
	return int(c.srv.opts.MaxQueuedBytes)
}

// drain writes the queue until it is empty, then ends; it closes the
// socket when the connection was finished meanwhile (see release) or its
// last frame asked for it.
func (c *Conn) drain() {
	if c.srv != nil {
		defer c.srv.writers.Done()
	}
	for {
		c.wmu.Lock()
		if len(c.wq) == 0 || c.wdead {
			c.writing = false
			c.wq, c.wqBytes = nil, 0
			closeNC := c.released
			c.wmu.Unlock()
			if closeNC {
				_ = c.nc.Close()
			}
			return
		}
		f := c.wq[0]
		c.wq[0] = outFrame{}
		c.wq = c.wq[1:]
		c.wqBytes -= len(f.p)
		c.wmu.Unlock()

		err := c.writeFrame(f)
		if err != nil || f.last {
			c.wmu.Lock()
			c.wdead = true
			c.wmu.Unlock()
			if err != nil && !c.closing.Load() {
				c.srv.debug("websocket write failed; closing", "remote", c.nc.RemoteAddr(), "err", err)
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					c.srv.dropped(DropSendTimeout)
				}
			}
			c.closing.Store(true)
			if err == nil {
				c.startLinger() // our close frame is out
			} else {
				c.endLinger()
			}
		}
	}
}

// writeFrame hands one frame to the socket within its deadline.
func (c *Conn) writeFrame(f outFrame) error {
	var hb [10]byte
	hdr := appendHeader(hb[:0], f.op, len(f.p))
	_ = c.nc.SetWriteDeadline(time.Now().Add(f.timeout))
	bufs := net.Buffers{hdr, f.p}
	if _, err := bufs.WriteTo(c.nc); err != nil {
		return fmt.Errorf("websocket write to %s: %w", c.nc.RemoteAddr(), err)
	}
	return nil
}

// release is the end of the connection for the socket: closed now, or by
// the writer once it has written what is queued (a close frame, typically).
func (c *Conn) release() {
	c.wmu.Lock()
	c.released = true
	c.stopLingerLocked()
	writing := c.writing
	c.wmu.Unlock()
	if !writing {
		_ = c.nc.Close()
	}
}
