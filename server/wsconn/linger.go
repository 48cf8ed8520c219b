package wsconn

import (
	"crypto/tls"
	"errors"
	"time"
)

// A connection we end with a close frame lingers before its socket is
// closed. Closing a TCP socket that still has unread input makes the
// kernel answer with a reset, and a reset can reach the peer before the
// close frame queued ahead of it or make its kernel discard it: a peer
// still sending when we close (a message too slow or too large, shed under
// load, a replaced connection, a protocol violation) would then never
// learn the close code that tells it why and when to come back. So once
// the close frame is written, our side is shut down for writing (a TLS
// close_notify, then a FIN), and what the peer still sends is read and
// discarded until it closes its side or Options.CloseLinger passes; only
// then does OnClose come (with the violation, when one was answered) and
// the socket close. Poller.Close and Conn.Close end a lingering connection
// at once.

const defaultCloseLinger = 2 * time.Second

// closeLinger is how long c may linger after its close frame.
func (c *Conn) closeLinger() time.Duration {
	if c.srv == nil {
		return defaultCloseLinger
	}
	return c.srv.opts.CloseLinger
}

// done reports whether the reader should end c now: it is closing and not
// lingering after a close frame.
func (c *Conn) done() bool { return c.closing.Load() && !c.lingering.Load() }

// startLinger runs once the last frame (our close frame) is written: our
// side is shut down for writing and the linger timer starts, or, when the
// connection was finished or cut meanwhile or cannot be half-closed, it
// ends now.
func (c *Conn) startLinger() {
	if !c.lingering.Load() || c.cut.Load() || c.halfClose() != nil {
		c.endLinger()
		return
	}
	c.wmu.Lock()
	if !c.released {
		c.lingerTimer = time.AfterFunc(c.closeLinger(), c.endLinger)
	}
	c.wmu.Unlock()
	if c.cut.Load() { // Close came while the timer was being set
		c.endLinger()
		return
	}
	// Nothing more of an unfinished message will be read: its memory goes
	// now, not when the peer leaves or the linger ends.
	c.svc.Lock()
	c.letGoLocked()
	c.svc.Unlock()
}

// letGoLocked lets go of what c held of an unfinished message; c.svc is
// held.
func (c *Conn) letGoLocked() {
	if c.srv != nil {
		c.srv.unhold(c)
	}
	c.r.release()
}

// endLinger ends c's linger: its socket is shut down, which wakes its
// reader to finish it.
func (c *Conn) endLinger() {
	c.lingering.Store(false)
	_ = c.terminate()
}

// cutLinger ends the linger of a connection that Close found closing
// already: at once if its close frame is written, else right after.
func (c *Conn) cutLinger() {
	if !c.lingering.Load() {
		return
	}
	c.cut.Store(true)
	c.wmu.Lock()
	started := c.lingerTimer != nil
	c.wmu.Unlock()
	if started {
		c.endLinger()
	}
}

// stopLingerLocked is part of the end of c (see release): no timer fires
// for it afterwards.
func (c *Conn) stopLingerLocked() {
	c.lingering.Store(false)
	if c.lingerTimer != nil {
		c.lingerTimer.Stop()
	}
}

// halfClose shuts our side of c down for writing after its last frame: a
// TLS session sends its close_notify, then the TCP socket its FIN.
func (c *Conn) halfClose() error {
	nc := c.nc
	if tc, ok := nc.(*tls.Conn); ok {
		if err := tc.CloseWrite(); err != nil {
			return err
		}
		nc = tc.NetConn()
	}
	if cw, ok := nc.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}
