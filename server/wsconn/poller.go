package wsconn

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Handler receives one connection's messages. Calls for one Conn never
// overlap, and OnClose comes last and exactly once. Handlers run on the
// poller's workers: they may write to any Conn (writes are queued and never
// wait for the peer), but should not block.
type Handler interface {
	// OnMessage gets a complete binary message; msg is valid only during
	// the call.
	OnMessage(c *Conn, msg []byte)
	// OnClose reports the end: err is nil after a close frame or Close,
	// io.EOF when the peer went away without one, otherwise what broke it
	// (a *ProtocolError for a violation by the peer).
	OnClose(c *Conn, err error)
}

// Poller reads the connections it serves and delivers their messages.
//
// Serve may be called from any goroutine, until Close. Close closes every
// connection, waits for their OnClose calls (or ctx), and stops; Serve then
// refuses new connections. Connections idle (no complete frame) for longer
// than Options.IdleTimeout are closed.
type Poller interface {
	Serve(c *Conn, h Handler) error
	Close(ctx context.Context) error
}

// ErrPollerClosed is returned by Serve after Close.
var ErrPollerClosed = errors.New("websocket poller closed")

// Options configure a Poller.
type Options struct {
	MaxMessageSize int64         // default 8 MiB
	IdleTimeout    time.Duration // default 90 s
	SendTimeout    time.Duration // one write; default 10 s
	Workers        int           // readers of ready sockets (epoll); default 64
	// MaxQueuedBytes bounds what waits to be written to one connection
	// beside the message being written; default 8 MiB.
	MaxQueuedBytes int64
	// MessageTimeout bounds the time from a message's first byte to its
	// last; default 30 s. MinMessageRate (bytes/s; default 1 KiB/s, -1 for
	// none) applies to a message after its first 5 s.
	MessageTimeout time.Duration
	MinMessageRate int64
	// MaxPendingBytes bounds the memory held for unfinished messages of all
	// connections together; default 64 MiB.
	MaxPendingBytes int64
	// CloseLinger bounds how long a connection ended with a close frame
	// (Conn.CloseWith) goes on reading and discarding what its peer still
	// sends before its socket is closed (see linger.go); default 2 s.
	CloseLinger time.Duration
	// OnDrop, when set, is told each time the poller drops a connection by
	// itself (Drop* reasons), e.g. to count them.
	OnDrop func(reason string)
	Log    *slog.Logger
}

const defaultMaxQueuedBytes = 8 << 20

func (o *Options) defaults() {
	if o.MaxMessageSize <= 0 {
		o.MaxMessageSize = 8 << 20
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 90 * time.Second
	}
	if o.SendTimeout <= 0 {
		o.SendTimeout = 10 * time.Second
	}
	if o.Workers <= 0 {
		o.Workers = 64
	}
	if o.MaxQueuedBytes <= 0 {
		o.MaxQueuedBytes = defaultMaxQueuedBytes
	}
	if o.MessageTimeout <= 0 {
		o.MessageTimeout = 30 * time.Second
	}
	if o.MinMessageRate == 0 {
		o.MinMessageRate = 1 << 10
	}
	if o.MaxPendingBytes <= 0 {
		o.MaxPendingBytes = 64 << 20
	}
	if o.CloseLinger <= 0 {
		o.CloseLinger = defaultCloseLinger
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
}

// conns is what every Poller implementation shares: the set of live
// connections, the idle sweep, the end of a connection, and the
// goroutine-per-connection reader.
type conns struct {
	opts Options

	mu     sync.Mutex
	live   map[uint64]*Conn
	nextID uint64
	closed bool
	empty  chan struct{} // closed when live empties after Close

	stop     chan struct{}
	sweeping sync.WaitGroup
	finished atomic.Int64

	pending atomic.Int64   // bytes of unfinished messages, all connections
	shedMu  sync.Mutex     // one shedder at a time
	writers sync.WaitGroup // connections' writer goroutines
}

func newConns(opts Options) *conns {
	opts.defaults()
	s := &conns{opts: opts, live: map[uint64]*Conn{}, stop: make(chan struct{})}
	s.sweeping.Add(1)
	go s.sweep()
	return s
}

// add registers c and prepares it for reading. early bytes (sent with the
// handshake) are consumed here, before any worker can see c; ok is false
// when they already ended it.
func (s *conns) add(c *Conn, h Handler) (ok bool, err error) {
	c.h, c.srv, c.sendTTL = h, s, s.opts.SendTimeout
	c.r.max = s.opts.MaxMessageSize
	c.touch()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = c.nc.Close()
		return false, ErrPollerClosed
	}
	s.nextID++
	c.id = s.nextID
	s.live[c.id] = c
	s.mu.Unlock()
	if len(c.early) > 0 {
		early := c.early
		c.early = nil
		if err := c.consume(early); err != nil {
			s.finish(c, err)
			return false, nil
		}
	}
	return true, nil
}

// finish ends c: what it held of unfinished messages is released, OnClose
// is called (with the peer's violation when one ended c), then the socket
// is closed and forgotten. Releasing first means the poller's total no
// longer counts c once its handler hears of the end. c.svc is held.
func (s *conns) finish(c *Conn, err error) {
	c.closing.Store(true)
	if c.violation != nil {
		err = c.violation // what our close frame answered, whatever ended the linger
	}
	if errors.Is(err, errPeerClosed) {
		err = nil
	}
	s.unhold(c)
	c.r.release()
	c.h.OnClose(c, err)
	c.release()
	s.mu.Lock()
	delete(s.live, c.id)
	if s.closed && len(s.live) == 0 && s.empty != nil {
		close(s.empty)
		s.empty = nil
	}
	s.mu.Unlock()
	s.finished.Add(1)
}

// ending is a worker's check before it reads c: a closing connection is
// finished now (true), unless it lingers after its close frame.
func (s *conns) ending(c *Conn) bool {
	if c.done() {
		s.finish(c, nil)
		return true
	}
	return false
}

// serveOnGoroutine serves c with a read goroutine of its own.
func (s *conns) serveOnGoroutine(c *Conn, h Handler) error {
	c.svc.Lock()
	ok, err := s.add(c, h)
	c.svc.Unlock()
	if !ok {
		return err
	}
	go s.readLoop(c)
	return nil
}

// readLoop reads c on its own goroutine (TLS, or no epoll).
func (s *conns) readLoop(c *Conn) {
	buf := make([]byte, 2048)
	for {
		n, err := c.nc.Read(buf)
		c.svc.Lock()
		if n > 0 {
			if c.closing.Load() { // lingering after our close frame
				c.letGoLocked()
			} else if cerr := c.consume(buf[:n]); cerr != nil {
				s.finish(c, cerr)
				c.svc.Unlock()
				return
			}
		}
		if err != nil {
			if c.closing.Load() {
				err = nil
			}
			s.finish(c, err)
			c.svc.Unlock()
			return
		}
		c.svc.Unlock()
	}
}

// sweep closes connections that have been idle too long.
func (s *conns) sweep() {
	defer s.sweeping.Done()
	every := min(max(min(s.opts.IdleTimeout, s.opts.MessageTimeout)/4, 50*time.Millisecond), 10*time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	var idle, slow []*Conn
	var why []string
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			limit := now.Add(-s.opts.IdleTimeout).UnixNano()
			idle, slow, why = idle[:0], slow[:0], why[:0]
			s.mu.Lock()
			for _, c := range s.live {
				if r := s.slowMessage(c, now.UnixNano()); r != "" {
					slow, why = append(slow, c), append(why, r)
				} else if c.lastActive.Load() < limit {
					idle = append(idle, c)
				}
			}
			s.mu.Unlock()
			for _, c := range idle {
				s.opts.Log.Debug("closing idle websocket", "remote", c.RemoteAddr())
				_ = c.Close()
			}
			for i, c := range slow {
				if c.closing.Load() {
					continue
				}
				s.opts.Log.Debug("closing websocket: message too slow", "remote", c.RemoteAddr(), "reason", why[i])
				s.dropped(DropSlowMessage)
				_ = c.CloseWith(ClosePolicy, why[i])
			}
			clear(idle)
			clear(slow)
		}
	}
}

// closeAll refuses new connections, closes every live one and waits until
// all have finished or ctx ends.
func (s *conns) closeAll(ctx context.Context) error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.stop)
		if len(s.live) > 0 {
			s.empty = make(chan struct{})
		}
	}
	empty := s.empty
	all := make([]*Conn, 0, len(s.live))
	for _, c := range s.live {
		all = append(all, c)
	}
	s.mu.Unlock()
	s.sweeping.Wait()
	for _, c := range all {
		_ = c.Close()
	}
	if empty != nil {
		select {
		case <-empty:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	// Writers end within their frame's deadline once their socket is closed.
	written := make(chan struct{})
	go func() { s.writers.Wait(); close(written) }()
	select {
	case <-written:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// goPoller reads every connection on its own goroutine.
type goPoller struct{ *conns }

var _ Poller = (*goPoller)(nil)

func newGoPoller(opts Options) *goPoller { return &goPoller{newConns(opts)} }

func (p *goPoller) Serve(c *Conn, h Handler) error { return p.serveOnGoroutine(c, h) }

func (p *goPoller) Close(ctx context.Context) error { return p.closeAll(ctx) }

// snapshot lists the live connections (for tests and diagnostics).
func (s *conns) snapshot() []*Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Conn, 0, len(s.live))
	for _, c := range s.live {
		out = append(out, c)
	}
	return out
}

// pendingBytes is the total of unfinished messages held (tests, diagnostics).
func (s *conns) pendingBytes() int64 { return s.pending.Load() }
