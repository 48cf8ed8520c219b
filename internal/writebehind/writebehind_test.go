package writebehind

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/myriarch/myriarch/internal/testkit"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A request is flushed soon, the interval flushes without one, a Flush
// waits for one in progress, Close flushes once more and stops the loop.
func TestWriter(t *testing.T) {
	var n atomic.Int32
	var mu sync.Mutex
	inFlush := false
	slow := make(chan struct{})
	w := Start(time.Hour, func() {
		mu.Lock()
		if inFlush {
			t.Error("two flushes at once")
		}
		inFlush = true
		mu.Unlock()
		if n.Add(1) == 1 {
			<-slow
		}
		mu.Lock()
		inFlush = false
		mu.Unlock()
	})
	w.Request()
	testkit.WaitFor(t, "the ticks", func() bool { return n.Load() == 1 })
	done := make(chan struct{})
	go func() { w.Flush(); close(done) }()
	select {
	case <-done:
		t.Fatal("Flush returned while a flush was running")
	case <-time.After(50 * time.Millisecond):
	}
	close(slow)
	<-done
	if got := n.Load(); got != 2 {
		t.Fatalf("%d flushes, want 2", got)
	}
	w.Close()
	if got := n.Load(); got != 3 {
		t.Fatalf("%d flushes after Close, want 3", got)
	}

	var ticks atomic.Int32
	w2 := Start(10*time.Millisecond, func() { ticks.Add(1) })
	testkit.WaitFor(t, "the ticks", func() bool { return ticks.Load() >= 2 })
	w2.Close()
}
