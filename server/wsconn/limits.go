package wsconn

import (
	"fmt"
	"time"
)

// A message that has begun to arrive holds memory until it is complete. So
// once begun it must be complete within Options.MessageTimeout and arrive at
// Options.MinMessageRate at least (checked after messageGrace), or the
// connection is closed with 1008; and the memory held for unfinished
// messages of all connections together stays under Options.MaxPendingBytes
// (what is allocated for them, which the frame's announced length never
// makes more than what has arrived, doubled): past it the
// connection holding the most is closed with 1013 (try again later), then
// the next, until the total fits.

// messageGrace is how long a message may arrive at any rate before
// MinMessageRate applies (a slow start, a congestion window opening).
const messageGrace = 5 * time.Second

// Reasons a connection is dropped by the poller itself (Options.OnDrop).
const (
	DropSlowMessage = "slow_message"    // MessageTimeout or MinMessageRate
	DropShed        = "shed"            // MaxPendingBytes
	DropQueueFull   = "send_queue_full" // MaxQueuedBytes
	DropSendTimeout = "send_timeout"    // a write not taken within its deadline
)

// track records, after a read, whether a message is unfinished and how much
// of it the reader holds; n is the bytes just read.
func (c *Conn) track(n int) {
	if !c.r.unfinished() {
		c.msgStart.Store(0)
		c.msgBytes.Store(0)
	} else if c.msgStart.Load() == 0 {
		c.msgStart.Store(time.Now().UnixNano())
		c.msgBytes.Store(int64(c.r.received()))
	} else {
		c.msgBytes.Add(int64(n))
	}
	if c.srv != nil {
		c.srv.hold(c, int64(c.r.held()))
	}
}

// hold sets what c holds of unfinished messages in the poller's total and
// sheds connections when the total is over the bound.
func (s *conns) hold(c *Conn, held int64) {
	if c.closing.Load() {
		held = 0 // ending: released at finish, no longer a candidate
	}
	d := held - c.held.Swap(held)
	if d == 0 {
		return
	}
	if total := s.pending.Add(d); d > 0 && total > s.opts.MaxPendingBytes {
		s.shed()
	}
}

// unhold takes what c holds out of the total.
func (s *conns) unhold(c *Conn) { s.pending.Add(-c.held.Swap(0)) }

// shed closes the connections holding the most unfinished bytes until the
// total is within bounds.
func (s *conns) shed() {
	s.shedMu.Lock()
	defer s.shedMu.Unlock()
	for s.pending.Load() > s.opts.MaxPendingBytes {
		var victim *Conn
		var most int64
		s.mu.Lock()
		for _, c := range s.live {
			if h := c.held.Load(); h > most && !c.closing.Load() {
				victim, most = c, h
			}
		}
		s.mu.Unlock()
		if victim == nil {
			return
		}
		s.opts.Log.Warn("closing the websocket holding the most unfinished bytes: unfinished messages exceed the server's bound",
			"remote", victim.RemoteAddr(), "held", most, "bound", s.opts.MaxPendingBytes)
		s.dropped(DropShed)
		_ = victim.CloseWith(CloseTryAgainLater, "the server holds too many unfinished messages; try again later")
		s.unhold(victim)
	}
}

// slowMessage reports why c's unfinished message is too slow, or "".
func (s *conns) slowMessage(c *Conn, now int64) string {
	start := c.msgStart.Load()
	if start == 0 {
		return ""
	}
	age := time.Duration(now - start)
	switch {
	case age > s.opts.MessageTimeout:
		return fmt.Sprintf("message not complete within %s", s.opts.MessageTimeout)
	case age > messageGrace && s.opts.MinMessageRate > 0:
		if rate := float64(c.msgBytes.Load()) / age.Seconds(); rate < float64(s.opts.MinMessageRate) {
			return fmt.Sprintf("message arriving at %.0f bytes/s, below the minimum of %d", rate, s.opts.MinMessageRate)
		}
	}
	return ""
}

// dropped reports a connection the poller dropped by itself.
func (s *conns) dropped(reason string) {
	if s != nil && s.opts.OnDrop != nil {
		s.opts.OnDrop(reason)
	}
}

// debug logs at debug level; c.srv is nil for a connection never served.
func (s *conns) debug(msg string, args ...any) {
	if s != nil {
		s.opts.Log.Debug(msg, args...)
	}
}
