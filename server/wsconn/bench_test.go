package wsconn

import (
	"net"
	"runtime"
	"testing"
	"time"
)

// BenchmarkIdleConnections measures what an idle, upgraded connection
// costs the server under each poller: 2 000 connections are opened,
// handshaken and left idle, then heap and goroutine stacks are compared
// with the state before. Client sides are bare sockets (no goroutine),
// the same for every poller, so differences between pollers are the
// server's.
func BenchmarkIdleConnections(b *testing.B) {
	const n = 2000
	for name, mk := range pollerKinds() {
		b.Run(name, func(b *testing.B) {
			for range b.N {
				f := newFixture(b, mk, false, Options{})
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				conns := make([]net.Conn, 0, n)
				for range n {
					nc, _ := f.rawDial(b, nil)
					conns = append(conns, nc)
				}
				f.waitLive(b, n)
				time.Sleep(200 * time.Millisecond) // net/http's handler goroutines end
				runtime.GC()
				runtime.GC()
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(int64(after.HeapInuse)-int64(before.HeapInuse))/n, "heap-B/conn")
				b.ReportMetric(float64(int64(after.StackInuse)-int64(before.StackInuse))/n, "stack-B/conn")
				for _, c := range conns {
					c.Close()
				}
			}
		})
	}
}
