//go:build !linux

package wsconn

import (
	"errors"
	"net"
)

// NewPoller returns the goroutine-per-connection poller: epoll is Linux only.
func NewPoller(opts Options) Poller { return newGoPoller(opts) }

// shutdown is never reached: only the epoll poller sets Conn.raw.
func (c *Conn) shutdown() error { return errors.ErrUnsupported }

// NewListener returns ln: without epoll, TLS sessions are read on a goroutine each.
func NewListener(ln net.Listener) net.Listener { return ln }
