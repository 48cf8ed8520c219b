//go:build !linux

package wsconn

import "errors"

// NewPoller returns the goroutine-per-connection poller: epoll is Linux only.
func NewPoller(opts Options) Poller { return newGoPoller(opts) }

// shutdown is never reached: only the epoll poller sets Conn.raw.
func (c *Conn) shutdown() error { return errors.ErrUnsupported }
