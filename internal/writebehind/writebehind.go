// Package writebehind runs the loop that writes a feature's changes to its
// store in batches: every interval, or sooner when a change asks for it,
// one write at a time.
package writebehind

import (
	"sync"
	"time"
)

// Writer calls a flush function in the background. Request and Flush may
// be called from any goroutine until Close; after Close they do nothing
// more than Flush.
type Writer struct {
	flush func()
	wake  chan struct{}
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
	mu    sync.Mutex // serialises flushes
}

// Start calls flush every interval, and soon after each Request, until
// Close.
func Start(every time.Duration, flush func()) *Writer {
	w := &Writer{flush: flush, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go w.loop(every)
	return w
}

func (w *Writer) loop(every time.Duration) {
	defer close(w.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
		case <-w.wake:
		}
		w.Flush()
	}
}

// Request asks for a flush soon; it never blocks.
func (w *Writer) Request() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Flush flushes now and returns once it is done: one that was running
// finishes first, so what was changed before Flush is written when it
// returns.
func (w *Writer) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flush()
}

// Close stops the loop and flushes what is left.
func (w *Writer) Close() {
	w.once.Do(func() {
		close(w.stop)
		<-w.done
	})
	w.Flush()
}
