package wsconn

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// pollerKinds are the implementations the contract suite runs against.
func pollerKinds() map[string]func(Options) Poller {
	kinds := map[string]func(Options) Poller{"goroutine": func(o Options) Poller { return newGoPoller(o) }}
	addPlatformPollers(kinds)
	return kinds
}

// echo answers every message with itself and records how connections end.
type echo struct {
	mu     sync.Mutex
	closes map[*Conn][]error
	msgs   int
	ended  chan error
}

func newEcho() *echo { return &echo{closes: map[*Conn][]error{}, ended: make(chan error, 1000)} }

func (e *echo) OnMessage(c *Conn, msg []byte) {
	e.mu.Lock()
	e.msgs++
	e.mu.Unlock()
	switch string(msg) {
	case "close-me":
		_ = c.Close()
		return
	case "close-with":
		_ = c.CloseWith(CloseNormal, "bye")
		return
	case "big": // a large answer, for peers that do not read
		_ = c.WriteOwned(make([]byte, 1<<20))
		return
	}
	_ = c.WriteMessage(msg)
}

func (e *echo) OnClose(c *Conn, err error) {
	e.mu.Lock()
	e.closes[c] = append(e.closes[c], err)
	e.mu.Unlock()
	select {
	case e.ended <- err:
	default: // nobody waits for ends beyond the buffer (benchmarks)
	}
}

func (e *echo) waitEnd(t *testing.T) error {
	t.Helper()
	select {
	case err := <-e.ended:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("OnClose was not called")
		return nil
	}
}

type fixture struct {
	p      Poller
	h      *echo
	srv    *httptest.Server
	url    string
	tlsCfg *tls.Config // client side, when the server speaks TLS
	// handlers counts the server's handlers: a hijacked connection's
	// handler is not waited for by httptest.Server.Close.
	handlers sync.WaitGroup
}

func newFixture(t testing.TB, mk func(Options) Poller, useTLS bool, opts Options) *fixture {
	t.Helper()
	var cfg *tls.Config
	if useTLS {
		cfg = &tls.Config{} // httptest's certificate
	}
	return newFixtureOn(t, mk, cfg, opts)
}

// newFixtureOn is newFixture serving TLS with cfg (nil: plain TCP; no
// certificate in cfg: httptest's).
func newFixtureOn(t testing.TB, mk func(Options) Poller, cfg *tls.Config, opts Options) *fixture {
	t.Helper()
	useTLS := cfg != nil
	f := &fixture{p: mk(opts), h: newEcho()}
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.handlers.Add(1)
		defer f.handlers.Done()
		c, err := Upgrade(w, r)
		if err != nil {
			return
		}
		if err := f.p.Serve(c, f.h); err != nil {
			t.Errorf("Serve: %v", err)
		}
	}))
	f.srv.Listener = NewListener(f.srv.Listener)
	if useTLS {
		if len(cfg.Certificates) > 0 {
			f.srv.TLS = cfg
		}
		f.srv.StartTLS()
		f.tlsCfg = f.srv.Client().Transport.(*http.Transport).TLSClientConfig
	} else {
		f.srv.Start()
	}
	f.url = "ws" + strings.TrimPrefix(f.srv.URL, "http")
	t.Cleanup(func() {
		// No handler may hand a connection to the poller after its Close:
		// stop the server, wait for the handlers, then close the poller.
		f.srv.Close()
		f.handlers.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := f.p.Close(ctx); err != nil {
			t.Errorf("Poller.Close: %v", err)
		}
	})
	return f
}

func (f *fixture) dial(t *testing.T) *websocket.Conn {
	t.Helper()
	d := websocket.Dialer{TLSClientConfig: f.tlsCfg}
	ws, _, err := d.Dial(f.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}

// waitLive waits until the poller serves n connections: the client has
// its 101 before the server's handler hands the connection to the poller.
func (f *fixture) waitLive(t testing.TB, n int) []*Conn {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		live := f.p.(interface{ snapshot() []*Conn }).snapshot()
		if len(live) == n {
			return live
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d live connections, want %d", len(live), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// rawDial opens a TCP connection and completes the handshake by hand,
// sending extra bytes right behind the request.
func (f *fixture) rawDial(t testing.TB, extra []byte) (net.Conn, *bufio.Reader) {
	t.Helper()
	addr := f.srv.Listener.Addr().String()
	var nc net.Conn
	var err error
	if f.tlsCfg != nil {
		nc, err = tls.Dial("tcp", addr, f.tlsCfg)
	} else {
		nc, err = net.Dial("tcp", addr)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	req := "GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
	if _, err := nc.Write(append([]byte(req), extra...)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(nc)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("Sec-WebSocket-Accept") != "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" {
		t.Fatalf("handshake answered %s, accept %q", resp.Status, resp.Header.Get("Sec-WebSocket-Accept"))
	}
	return nc, br
}

// readServerFrame reads one unmasked frame.
func readServerFrame(t testing.TB, br *bufio.Reader) (op byte, payload []byte) {
	t.Helper()
	h := make([]byte, 2)
	if _, err := ioReadFull(br, h); err != nil {
		t.Fatalf("read frame: %v", err)
	}
	n := int(h[1] & 0x7f)
	switch n {
	case 126:
		b := make([]byte, 2)
		ioReadFull(br, b)
		n = int(b[0])<<8 | int(b[1])
	case 127:
		t.Fatal("unexpected 64-bit length")
	}
	payload = make([]byte, n)
	if _, err := ioReadFull(br, payload); err != nil {
		t.Fatalf("read payload: %v", err)
	}
	return h[0] & 0x0f, payload
}

func ioReadFull(br *bufio.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := br.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func TestPollerContract(t *testing.T) {
	for name, mk := range pollerKinds() {
		for _, useTLS := range []bool{false, true} {
			if useTLS {
				name += "+tls"
			}
			testPoller(t, name, mk, useTLS)
		}
	}
}

func testPoller(t *testing.T, name string, mk func(Options) Poller, useTLS bool) {
	{
		t.Run(name, func(t *testing.T) {
			t.Run("echo sizes", func(t *testing.T) {
				f := newFixture(t, mk, useTLS, Options{})
				ws := f.dial(t)
				for _, n := range []int{0, 1, 125, 126, 65535, 65536, 1 << 20} {
					msg := bytes.Repeat([]byte{byte(n)}, n)
					if err := ws.WriteMessage(websocket.BinaryMessage, msg); err != nil {
						t.Fatal(err)
					}
					mt, back, err := ws.ReadMessage()
					if err != nil || mt != websocket.BinaryMessage || !bytes.Equal(back, msg) {
						t.Fatalf("size %d: got type %d, %d bytes, err %v", n, mt, len(back), err)
					}
				}
			})
			t.Run("byte by byte, fragments, ping and early bytes", func(t *testing.T) {
				f := newFixture(t, mk, useTLS, Options{})
				early := clientFrame(true, opBinary, []byte("early"))
				nc, br := f.rawDial(t, early)
				if op, p := readServerFrame(t, br); op != opBinary || string(p) != "early" {
					t.Fatalf("early message echoed as op %d %q", op, p)
				}
				stream := cat(clientFrame(false, opBinary, []byte("one ")),
					clientFrame(true, opPing, []byte("are you there")),
					clientFrame(true, opContinuation, []byte("two")))
				for i := range stream {
					if _, err := nc.Write(stream[i : i+1]); err != nil {
						t.Fatal(err)
					}
				}
				if op, p := readServerFrame(t, br); op != opPong || string(p) != "are you there" {
					t.Fatalf("ping answered with op %d %q", op, p)
				}
				if op, p := readServerFrame(t, br); op != opBinary || string(p) != "one two" {
					t.Fatalf("fragmented message echoed as op %d %q", op, p)
				}
				nc.Write(clientFrame(true, opClose, []byte{0x03, 0xe8, 'b', 'y', 'e'}))
				if op, p := readServerFrame(t, br); op != opClose || !bytes.Equal(p, []byte{0x03, 0xe8}) {
					t.Fatalf("close answered with op %d %x", op, p)
				}
				if err := f.h.waitEnd(t); err != nil {
					t.Errorf("OnClose after a close frame: %v, want nil", err)
				}
			})
			t.Run("violations are answered with their close code", func(t *testing.T) {
				f := newFixture(t, mk, useTLS, Options{MaxMessageSize: 1000})
				for _, tt := range []struct {
					frame []byte
					code  int
				}{
					{clientFrame(true, opText, []byte("hi")), CloseUnsupportedData},
					{clientFrame(true, opBinary, make([]byte, 1001))[:20], CloseTooBig},
					{[]byte{0x82, 0x01, 'x'}, CloseProtocolError},
					{clientFrame(true, opClose, []byte{0x03}), CloseProtocolError},                 // 1-byte close payload
					{clientFrame(true, opClose, []byte{0x03, 0xec}), CloseProtocolError},           // 1004 is reserved
					{clientFrame(true, opClose, []byte{0x03, 0xe8, 0xff, 0xfe}), CloseInvalidData}, // reason not UTF-8
				} {
					nc, br := f.rawDial(t, nil)
					nc.Write(tt.frame)
					op, p := readServerFrame(t, br)
					if op != opClose || len(p) < 2 || int(p[0])<<8|int(p[1]) != tt.code {
						t.Errorf("frame %x: answered op %d %x, want close %d", tt.frame[:2], op, p, tt.code)
					}
					nc.Close() // the server lingers until the peer leaves
					var pe *ProtocolError
					if err := f.h.waitEnd(t); !errors.As(err, &pe) || pe.Code != tt.code {
						t.Errorf("OnClose error %v, want ProtocolError %d", err, tt.code)
					}
				}
			})
			t.Run("peer leaves without close frame", func(t *testing.T) {
				f := newFixture(t, mk, useTLS, Options{})
				nc, _ := f.rawDial(t, nil)
				nc.Close()
				if err := f.h.waitEnd(t); err == nil {
					t.Error("OnClose(nil) for a dropped connection; want io.EOF or a read error")
				}
			})
			t.Run("Close from a handler and from outside", func(t *testing.T) {
				f := newFixture(t, mk, useTLS, Options{})
				ws := f.dial(t)
				ws.WriteMessage(websocket.BinaryMessage, []byte("close-me"))
				if _, _, err := ws.ReadMessage(); err == nil {
					t.Fatal("connection still open after the handler closed it")
				}
				if err := f.h.waitEnd(t); err != nil {
					t.Errorf("OnClose after Close: %v, want nil", err)
				}
				// From another goroutine, while the socket is idle (armed).
				ws2 := f.dial(t)
				ws2.WriteMessage(websocket.BinaryMessage, []byte("hi"))
				ws2.ReadMessage()
				c := f.waitLive(t, 1)[0]
				if strings.HasPrefix(name, "epoll") && (c.raw == nil || c.tls != useTLS) {
					t.Fatalf("epoll poller reads this connection on a goroutine (raw %v, tls %v)", c.raw != nil, c.tls)
				}
				go c.Close()
				if err := f.h.waitEnd(t); err != nil {
					t.Errorf("OnClose after an outside Close: %v, want nil", err)
				}
				if err := c.WriteMessage([]byte("late")); !errors.Is(err, ErrClosed) {
					t.Errorf("write after Close: %v, want ErrClosed", err)
				}
				f.h.mu.Lock()
				for conn, errs := range f.h.closes {
					if len(errs) != 1 {
						t.Errorf("conn %d: OnClose called %d times", conn.id, len(errs))
					}
				}
				f.h.mu.Unlock()
			})
			t.Run("after our close frame the server reads what the peer still sends until it leaves", func(t *testing.T) {
				for _, tt := range []struct {
					name  string
					first []byte // what makes the server close
					code  int    // the close code the peer must get
					msgs  int    // messages delivered
					check func(error) bool
				}{
					{"CloseWith", clientFrame(true, opBinary, []byte("close-with")), CloseNormal, 1,
						func(err error) bool { return err == nil }},
					{"violation", clientFrame(true, opText, []byte("not binary")), CloseUnsupportedData, 0,
						func(err error) bool {
							var pe *ProtocolError
							return errors.As(err, &pe) && pe.Code == CloseUnsupportedData
						}},
				} {
					t.Run(tt.name, func(t *testing.T) {
						f := newFixture(t, mk, useTLS, Options{CloseLinger: time.Hour})
						nc, br := f.rawDial(t, tt.first)
						// 32 MiB after the close, several times what socket
						// buffers hold: a server that closed its socket with
						// this unread would answer with a reset, which can
						// cost the peer the close code.
						chunk := clientFrame(true, opBinary, make([]byte, 64<<10))
						nc.SetWriteDeadline(time.Now().Add(30 * time.Second))
						for i := range 512 {
							if _, err := nc.Write(chunk); err != nil {
								t.Fatalf("write %d after the server's close frame: %v", i, err)
							}
						}
						if op, p := readServerFrame(t, br); op != opClose || len(p) < 2 || int(p[0])<<8|int(p[1]) != tt.code {
							t.Fatalf("got op %d %q, want close %d", op, p, tt.code)
						}
						nc.SetReadDeadline(time.Now().Add(10 * time.Second))
						if _, err := br.ReadByte(); err != io.EOF {
							t.Fatalf("after the close frame: %v, want io.EOF (the server's side shut down)", err)
						}
						select {
						case err := <-f.h.ended:
							t.Fatalf("OnClose(%v) while the peer still had its side open and the linger had not passed", err)
						default:
						}
						nc.Close()
						if err := f.h.waitEnd(t); !tt.check(err) {
							t.Errorf("OnClose once the peer left: %v", err)
						}
						f.h.mu.Lock()
						defer f.h.mu.Unlock()
						if f.h.msgs != tt.msgs {
							t.Errorf("%d messages delivered, want %d (what follows our close frame is dropped)", f.h.msgs, tt.msgs)
						}
					})
				}
			})
			t.Run("a lingering connection ends after CloseLinger, or at once by Close", func(t *testing.T) {
				f := newFixture(t, mk, useTLS, Options{CloseLinger: 50 * time.Millisecond})
				_, br := f.rawDial(t, clientFrame(true, opBinary, []byte("close-with")))
				if err := f.h.waitEnd(t); err != nil {
					t.Errorf("OnClose after the linger: %v, want nil", err)
				}
				if op, p := readServerFrame(t, br); op != opClose || !bytes.Equal(p, closePayload(CloseNormal, "bye")) {
					t.Fatalf("got op %d %q, want the close frame", op, p)
				}

				f = newFixture(t, mk, useTLS, Options{CloseLinger: time.Hour})
				for _, end := range []string{"Conn.Close", "Poller.Close"} {
					_, br := f.rawDial(t, clientFrame(true, opBinary, []byte("close-with")))
					if op, _ := readServerFrame(t, br); op != opClose {
						t.Fatalf("got op %d, want the close frame", op)
					}
					c := f.waitLive(t, 1)[0]
					if end == "Conn.Close" {
						go c.Close()
					} else {
						ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
						defer cancel()
						if err := f.p.Close(ctx); err != nil {
							t.Fatalf("Poller.Close with a connection lingering for an hour: %v", err)
						}
					}
					if err := f.h.waitEnd(t); err != nil {
						t.Errorf("OnClose after %s: %v, want nil", end, err)
					}
				}
			})
			t.Run("a peer that stops reading is dropped after the send timeout", func(t *testing.T) {
				f := newFixture(t, mk, useTLS, Options{SendTimeout: 300 * time.Millisecond})
				f.rawDial(t, nil) // never reads
				live := f.waitLive(t, 1)
				big := make([]byte, 1<<20)
				var err error
				for i := 0; i < 1000 && err == nil; i++ { // socket buffers fill after a few MiB
					err = live[0].WriteMessage(big)
				}
				if err == nil {
					t.Fatal("1 GiB written to a peer that reads nothing")
				}
				if e := f.h.waitEnd(t); e != nil {
					t.Errorf("OnClose after a send timeout: %v, want nil (we closed it)", e)
				}
				// Others are unaffected.
				ws := f.dial(t)
				if err := ws.WriteMessage(websocket.BinaryMessage, []byte("still here")); err != nil {
					t.Fatal(err)
				}
				if _, back, err := ws.ReadMessage(); err != nil || string(back) != "still here" {
					t.Fatalf("echo after a stuck peer: %q %v", back, err)
				}
			})
			t.Run("idle timeout", func(t *testing.T) {
				f := newFixture(t, mk, useTLS, Options{IdleTimeout: 300 * time.Millisecond})
				ws := f.dial(t)
				start := time.Now()
				if err := f.h.waitEnd(t); err != nil {
					t.Errorf("OnClose after the idle timeout: %v, want nil", err)
				}
				if time.Since(start) < 300*time.Millisecond {
					t.Error("closed before the idle timeout")
				}
				if _, _, err := ws.ReadMessage(); err == nil {
					t.Error("client still connected")
				}
			})
			t.Run("many connections, concurrent writers, Close waits for all", func(t *testing.T) {
				f := newFixture(t, mk, useTLS, Options{Workers: 4})
				const n = 100
				var wg sync.WaitGroup
				for i := range n {
					ws := f.dial(t)
					wg.Add(1)
					go func() {
						defer wg.Done()
						for j := range 20 {
							msg := fmt.Sprintf("%d-%d", i, j)
							if err := ws.WriteMessage(websocket.BinaryMessage, []byte(msg)); err != nil {
								t.Error(err)
								return
							}
							if _, back, err := ws.ReadMessage(); err != nil || string(back) != msg {
								t.Errorf("got %q %v, want %q", back, err, msg)
								return
							}
						}
					}()
				}
				wg.Wait()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := f.p.Close(ctx); err != nil {
					t.Fatal(err)
				}
				f.h.mu.Lock()
				defer f.h.mu.Unlock()
				if len(f.h.closes) != n || f.h.msgs != n*20 {
					t.Errorf("after Close: %d connections ended, %d messages; want %d and %d", len(f.h.closes), f.h.msgs, n, n*20)
				}
				a, b := net.Pipe()
				defer b.Close()
				if err := f.p.Serve(&Conn{nc: a}, f.h); !errors.Is(err, ErrPollerClosed) {
					t.Errorf("Serve after Close: %v, want ErrPollerClosed", err)
				}
			})
		})
	}
}
