package wsconn

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// NewPoller returns the epoll poller, or the goroutine poller if epoll is
// unavailable.
func NewPoller(opts Options) Poller {
	p, err := newEpoller(opts)
	if err != nil {
		opts.defaults()
		opts.Log.Warn("epoll unavailable; reading each websocket on its own goroutine", "err", err)
		return newGoPoller(opts)
	}
	return p
}

// epoller watches every plain-TCP connection in one epoll instance, armed
// one-shot: a ready socket goes to exactly one worker, which reads what is
// there, dispatches it and re-arms the socket. So calls for one connection
// never overlap and an idle connection has no goroutine.
type epoller struct {
	*conns
	ep       int
	ready    chan *Conn
	stopped  atomic.Bool
	stopOnce sync.Once
	waiter   sync.WaitGroup // the event loop
	workers  sync.WaitGroup
	done     chan struct{} // closed when the loop and workers have stopped

	againMu sync.Mutex
	again   []*Conn // TLS connections that used their read budget, to service again
}

var _ Poller = (*epoller)(nil)

const pollEvents = unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLONESHOT

// readChunk is what a worker reads per system call; larger messages take
// several rounds.
const readChunk = 32 << 10

func newEpoller(opts Options) (*epoller, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	p := &epoller{conns: newConns(opts), ep: ep, done: make(chan struct{})}
	p.ready = make(chan *Conn, 4*p.opts.Workers)
	p.waiter.Add(1)
	p.workers.Add(p.opts.Workers)
	go p.wait()
	for range p.opts.Workers {
		go p.work()
	}
	return p, nil
}

func (p *epoller) Serve(c *Conn, h Handler) error {
	switch nc := c.nc.(type) {
	case *tls.Conn:
		sc, ok := nc.NetConn().(*sockConn)
		if !ok { // not from NewListener: read it on its own goroutine
			return p.serveOnGoroutine(c, h)
		}
		c.raw, c.tls = sc.raw, true
		c.svc.Lock()
		defer c.svc.Unlock()
		if ok, err := p.add(c, h); !ok {
			return err
		}
		sc.nonblock.Store(true)
		// Records may already sit in the TLS session's buffer, where epoll
		// cannot see them: read until the socket would block, then arm.
		p.serviceTLSLocked(c, make([]byte, 4096), unix.EPOLL_CTL_ADD)
		return nil
	case syscall.Conn:
		raw, err := nc.SyscallConn()
		if err != nil {
			_ = c.nc.Close()
			return fmt.Errorf("websocket from %s: %w", c.nc.RemoteAddr(), err)
		}
		c.raw = raw
		c.svc.Lock()
		defer c.svc.Unlock()
		if ok, err := p.add(c, h); !ok {
			return err
		}
		if err := p.ctl(c, unix.EPOLL_CTL_ADD); err != nil {
			p.finish(c, err)
		}
		return nil
	default:
		return p.serveOnGoroutine(c, h)
	}
}

// ctl adds or re-arms c's socket. Going through RawConn.Control keeps the
// descriptor from being closed (and its number reused) meanwhile.
func (p *epoller) ctl(c *Conn, op int) error {
	ev := unix.EpollEvent{Events: pollEvents, Fd: int32(uint32(c.id)), Pad: int32(uint32(c.id >> 32))}
	var cerr error
	if err := c.raw.Control(func(fd uintptr) { cerr = unix.EpollCtl(p.ep, op, int(fd), &ev) }); err != nil {
		return err
	}
	if cerr != nil {
		return fmt.Errorf("epoll_ctl: %w", cerr)
	}
	return nil
}

// wait hands ready sockets to the workers.
func (p *epoller) wait() {
	defer p.waiter.Done()
	events := make([]unix.EpollEvent, 256)
	for !p.stopped.Load() {
		wait := 200
		p.againMu.Lock()
		if len(p.again) > 0 {
			wait = 0
		}
		p.againMu.Unlock()
		n, err := unix.EpollWait(p.ep, events, wait)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			p.opts.Log.Error("epoll_wait failed; websocket reads stop", "err", err)
			return
		}
		p.againMu.Lock()
		again := p.again
		p.again = nil
		p.againMu.Unlock()
		for _, c := range again {
			p.ready <- c
		}
		for i := range events[:n] {
			id := uint64(uint32(events[i].Fd)) | uint64(uint32(events[i].Pad))<<32
			p.mu.Lock()
			c := p.live[id]
			p.mu.Unlock()
			if c != nil {
				p.ready <- c
			}
		}
	}
}

func (p *epoller) work() {
	defer p.workers.Done()
	buf := make([]byte, readChunk)
	for c := range p.ready {
		p.service(c, buf)
	}
}

// service reads once from a ready socket, dispatches what arrived and
// re-arms it, or ends the connection.
func (p *epoller) service(c *Conn, buf []byte) {
	c.svc.Lock()
	defer c.svc.Unlock()
	if c.tls {
		p.serviceTLSLocked(c, buf, unix.EPOLL_CTL_MOD)
		return
	}
	if p.ending(c) {
		return
	}
	n, err := readRaw(c.raw, buf)
	switch {
	case isWouldBlock(err):
	case err != nil:
		p.finish(c, fmt.Errorf("websocket read from %s: %w", c.nc.RemoteAddr(), err))
		return
	case n == 0:
		p.finish(c, p.endErr(c))
		return
	case c.closing.Load(): // lingering after our close frame
		c.letGoLocked()
	default:
		if err := c.consume(buf[:n]); err != nil {
			p.finish(c, err)
			return
		}
	}
	p.rearm(c, unix.EPOLL_CTL_MOD)
}

// tlsBudget is how much one service of a TLS connection reads before it
// lets other connections have the worker.
const tlsBudget = 1 << 20

// serviceTLSLocked reads a TLS session until its socket would block: records
// already buffered inside crypto/tls are invisible to epoll, so reading only
// once could strand a message there.
func (p *epoller) serviceTLSLocked(c *Conn, buf []byte, op int) {
	budget := tlsBudget
	for {
		if p.ending(c) {
			return
		}
		n, err := c.nc.Read(buf)
		switch {
		case n == 0:
		case c.closing.Load(): // lingering after our close frame
			c.letGoLocked()
		default:
			if cerr := c.consume(buf[:n]); cerr != nil {
				p.finish(c, cerr)
				return
			}
		}
		budget -= n
		if err != nil {
			if isWouldBlock(err) {
				// Idle until the socket is readable: the session's read
				// buffers are not needed meanwhile.
				releaseIdleTLS(c.nc.(*tls.Conn))
				break
			}
			if c.closing.Load() {
				err = nil
			}
			p.finish(c, err)
			return
		}
		if budget <= 0 && op == unix.EPOLL_CTL_MOD {
			// Still ours (not armed): the event loop hands it out again.
			p.againMu.Lock()
			p.again = append(p.again, c)
			p.againMu.Unlock()
			return
		}
	}
	p.rearm(c, op)
}

// endErr is what a read of 0 bytes means: our own Close, or the peer leaving.
func (p *epoller) endErr(c *Conn) error {
	if c.closing.Load() {
		return nil
	}
	return io.EOF
}

// rearm hands c back to epoll, or ends it if it is closing and not
// lingering.
func (p *epoller) rearm(c *Conn, op int) {
	if c.done() {
		p.finish(c, nil)
		return
	}
	if err := p.ctl(c, op); err != nil {
		p.finish(c, err)
	}
}

// readRaw reads without waiting: the descriptor is non-blocking and the
// poller already knows it is readable.
func readRaw(raw syscall.RawConn, b []byte) (n int, err error) {
	cerr := raw.Read(func(fd uintptr) bool {
		for {
			n, err = unix.Read(int(fd), b)
			if !errors.Is(err, unix.EINTR) {
				break
			}
		}
		return true
	})
	if cerr != nil {
		return 0, cerr
	}
	if n < 0 {
		n = 0
	}
	return n, err
}

func isWouldBlock(err error) bool {
	return errors.Is(err, unix.EAGAIN) || errors.Is(err, errWouldBlock)
}

// Close closes every connection, waits for them (or ctx), then stops the
// event loop and the workers (waiting for them too, within ctx).
func (p *epoller) Close(ctx context.Context) error {
	err := p.closeAll(ctx)
	p.stopOnce.Do(func() {
		p.stopped.Store(true)
		go func() {
			p.waiter.Wait()
			close(p.ready) // the event loop was its only sender
			p.workers.Wait()
			_ = unix.Close(p.ep)
			close(p.done)
		}()
	})
	select {
	case <-p.done:
	case <-ctx.Done():
		err = errors.Join(err, ctx.Err())
	}
	return err
}

// shutdown shuts c's socket down in both directions (see Close).
func (c *Conn) shutdown() error {
	var serr error
	if err := c.raw.Control(func(fd uintptr) { serr = unix.Shutdown(int(fd), unix.SHUT_RDWR) }); err != nil {
		return nil // already closed by its worker
	}
	if serr != nil && !errors.Is(serr, unix.ENOTCONN) {
		return fmt.Errorf("shut down websocket to %s: %w", c.nc.RemoteAddr(), serr)
	}
	return nil
}
