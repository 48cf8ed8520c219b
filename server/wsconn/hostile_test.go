package wsconn

import (
	"bufio"
	"encoding/binary"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Attacks on the poller by peers that hold it up: they stop reading what
// they are sent, or begin messages they never finish.

// closeCode reads frames until a close frame and returns its code (0 when
// the connection ended without one).
func closeCode(t *testing.T, nc net.Conn, br *bufio.Reader) (int, string) {
	t.Helper()
	_ = nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	for {
		h := make([]byte, 2)
		if _, err := ioReadFull(br, h); err != nil {
			return 0, err.Error()
		}
		n := int(h[1] & 0x7f)
		switch n {
		case 126:
			b := make([]byte, 2)
			ioReadFull(br, b)
			n = int(binary.BigEndian.Uint16(b))
		case 127:
			b := make([]byte, 8)
			ioReadFull(br, b)
			n = int(binary.BigEndian.Uint64(b))
		}
		p := make([]byte, n)
		if _, err := ioReadFull(br, p); err != nil {
			return 0, err.Error()
		}
		if h[0]&0x0f == opClose && len(p) >= 2 {
			return int(binary.BigEndian.Uint16(p)), string(p[2:])
		}
	}
}

// frameHeader is a masked client header for a binary frame of n bytes.
func frameHeader(n int) []byte {
	return binary.BigEndian.AppendUint64([]byte{0x82, 0x80 | 127}, uint64(n))
}

func TestHostilePeers(t *testing.T) {
	for name, mk := range pollerKinds() {
		t.Run(name, func(t *testing.T) {
			// Peers that send requests and never read the answers must not
			// take the workers: with every worker blocked in a write, a
			// healthy peer would wait the whole send timeout for its echo.
			t.Run("peers that do not read do not stall the others", func(t *testing.T) {
				f := newFixture(t, mk, false, Options{Workers: 2, SendTimeout: 2 * time.Minute})
				for range 4 {
					nc, _ := f.rawDial(t, nil) // never reads
					for range 24 {
						if _, err := nc.Write(clientFrame(true, opBinary, []byte("big"))); err != nil {
							break // already dropped: its queue overflowed
						}
					}
				}
				ws := f.dial(t)
				_ = ws.SetReadDeadline(time.Now().Add(30 * time.Second))
				if err := ws.WriteMessage(websocket.BinaryMessage, []byte("healthy")); err != nil {
					t.Fatal(err)
				}
				if _, back, err := ws.ReadMessage(); err != nil || string(back) != "healthy" {
					t.Fatalf("healthy peer's echo: %q %v (workers stalled by peers that do not read)", back, err)
				}
			})
			t.Run("a message begun and never finished is closed with 1008", func(t *testing.T) {
				f := newFixture(t, mk, false, Options{MessageTimeout: 300 * time.Millisecond, IdleTimeout: time.Hour})
				nc, br := f.rawDial(t, nil)
				// 8 MiB announced, 64 KiB sent, then nothing.
				msg := append(append(frameHeader(8<<20), 1, 2, 3, 4), make([]byte, 64<<10)...)
				if _, err := nc.Write(msg); err != nil {
					t.Fatal(err)
				}
				if code, reason := closeCode(t, nc, br); code != ClosePolicy || !strings.Contains(reason, "not complete within") {
					t.Fatalf("unfinished message answered with close %d %q, want %d", code, reason, ClosePolicy)
				}
				if err := f.h.waitEnd(t); err != nil {
					t.Errorf("OnClose: %v, want nil (closed by the server)", err)
				}
				if n := f.p.(interface{ pendingBytes() int64 }).pendingBytes(); n != 0 {
					t.Errorf("%d unfinished bytes still counted after the connection ended", n)
				}
			})
			t.Run("past the server's bound the largest holder is shed with 1013", func(t *testing.T) {
				f := newFixture(t, mk, false, Options{MaxPendingBytes: 1 << 20, IdleTimeout: time.Hour})
				// Frames one byte short: what the poller holds for each is then
				// exactly the frame (header and payload).
				send := func(size int) (net.Conn, *bufio.Reader) {
					nc, br := f.rawDial(t, nil)
					if _, err := nc.Write(append(append(frameHeader(size), 1, 2, 3, 4), make([]byte, size-1)...)); err != nil {
						t.Fatal(err)
					}
					return nc, br
				}
				const hdr = 14
				big, bigR := send(600 << 10)
				f.waitPending(t, 600<<10+hdr)
				small, _ := send(300 << 10)
				f.waitPending(t, 900<<10+2*hdr)
				send(300 << 10) // 1.2 MiB in all: over the bound
				if code, _ := closeCode(t, big, bigR); code != CloseTryAgainLater {
					t.Fatalf("largest holder closed with %d, want %d", code, CloseTryAgainLater)
				}
				f.waitPending(t, 600<<10+2*hdr)
				_ = small.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
				if _, err := small.Read(make([]byte, 1)); err == nil || !isTimeout(err) {
					t.Errorf("a smaller holder was dropped too: %v", err)
				}
			})
		})
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// waitPending waits until the poller counts exactly n unfinished bytes.
func (f *fixture) waitPending(t *testing.T, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := f.p.(interface{ pendingBytes() int64 }).pendingBytes()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("poller holds %d unfinished bytes, want %d", got, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestMinMessageRate: after the grace period a message must arrive at the
// minimum rate.
func TestMinMessageRate(t *testing.T) {
	s := &conns{opts: Options{MessageTimeout: time.Minute, MinMessageRate: 1000}}
	now := time.Now().UnixNano()
	c := &Conn{}
	for _, tt := range []struct {
		age   time.Duration
		bytes int64
		slow  string
	}{
		{0, 0, ""},
		{2 * time.Second, 1, ""}, // within the grace period
		{10 * time.Second, 20000, ""},
		{10 * time.Second, 9000, "below the minimum"},
		{2 * time.Minute, 1 << 30, "not complete within"},
	} {
		c.msgStart.Store(0)
		if tt.age > 0 {
			c.msgStart.Store(now - int64(tt.age))
		}
		c.msgBytes.Store(tt.bytes)
		got := s.slowMessage(c, now)
		if (tt.slow == "") != (got == "") || !strings.Contains(got, tt.slow) {
			t.Errorf("age %s, %d bytes: %q, want %q", tt.age, tt.bytes, got, tt.slow)
		}
	}
}
