package wsconn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"testing"
	"time"

	coder "github.com/coder/websocket"
	gorilla "github.com/gorilla/websocket"
)

// The differential test drives the server with two independent, well-kept
// client implementations (gorilla/websocket and coder/websocket), each
// framing and fragmenting in its own way, through every frame type,
// fragmentation, control frames between fragments, close codes and invalid
// UTF-8 in text and close frames. Every scenario must give the same outcome
// with both clients, on every poller, with and without TLS, and the outcome
// must be the one RFC 6455 and OpAMP (binary messages only) allow.

// outcome is what a scenario observably did.
type outcome struct {
	Echo      string // the echoed message, summarised
	Pong      bool   // a pong answered the ping
	CloseCode int    // the code of the server's close frame; -1: no close frame; 0: still open
}

func summarise(b []byte) string {
	if len(b) <= 16 {
		return fmt.Sprintf("%q", b)
	}
	return fmt.Sprintf("%d bytes %q…%q", len(b), b[:8], b[len(b)-8:])
}

// wsClient is one client connection.
type wsClient interface {
	// send writes msg as one message of the given type in frames of at
	// most frag payload bytes (0: one frame); with pingMid, a ping goes
	// out between the first frames and the rest, and the result says
	// whether its pong came back.
	send(msg []byte, text bool, frag int, pingMid bool) (pong bool, err error)
	// read returns the next data message.
	read() ([]byte, error)
	// ping sends a ping with payload and reports whether the same payload
	// came back in a pong.
	ping(payload []byte) bool
	// close sends a close frame (code -1: empty payload) and returns the
	// code of the close frame the server answered with.
	close(code int, reason string) int
	// ended reads until the server ends the connection and returns the code
	// of its close frame (-1 when it sent none).
	ended() int
	abort()
}

type dialer func(t *testing.T, f *fixture, frag int) wsClient

var clients = map[string]dialer{"gorilla": dialGorilla, "coder": dialCoder}

// --- gorilla/websocket: buffers a message and flushes a frame whenever its
// write buffer is full, so frag is its write buffer size.

type gorillaClient struct {
	ws    *gorilla.Conn
	msgs  chan []byte
	pongs chan string
	done  chan error
	frag  int
}

func dialGorilla(t *testing.T, f *fixture, frag int) wsClient {
	t.Helper()
	d := gorilla.Dialer{TLSClientConfig: f.tlsCfg, WriteBufferSize: 4 << 20}
	if frag > 0 {
		d.WriteBufferSize = frag
	}
	ws, _, err := d.Dial(f.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &gorillaClient{ws: ws, msgs: make(chan []byte, 16), pongs: make(chan string, 16), done: make(chan error, 1), frag: frag}
	ws.SetPongHandler(func(p string) error { c.pongs <- p; return nil })
	ws.SetCloseHandler(func(int, string) error { return nil }) // answered by close() or the server ends it
	go func() {
		for {
			_, p, err := ws.ReadMessage()
			if err != nil {
				c.done <- err
				return
			}
			c.msgs <- p
		}
	}()
	t.Cleanup(c.abort)
	return c
}

func (c *gorillaClient) send(msg []byte, text bool, frag int, pingMid bool) (bool, error) {
	typ := gorilla.BinaryMessage
	if text {
		typ = gorilla.TextMessage
	}
	w, err := c.ws.NextWriter(typ)
	if err != nil {
		return false, err
	}
	half := len(msg) / 2
	if _, err := w.Write(msg[:half]); err != nil { // frames of the first half are flushed
		return false, err
	}
	pong := false
	if pingMid {
		if err := c.ws.WriteControl(gorilla.PingMessage, []byte("mid"), time.Now().Add(5*time.Second)); err != nil {
			return false, err
		}
		select {
		case p := <-c.pongs:
			pong = p == "mid"
		case <-time.After(5 * time.Second):
		}
	}
	if _, err := w.Write(msg[half:]); err != nil {
		return pong, err
	}
	return pong, w.Close()
}

func (c *gorillaClient) read() ([]byte, error) {
	select {
	case m := <-c.msgs:
		return m, nil
	case err := <-c.done:
		c.done <- err
		return nil, err
	case <-time.After(10 * time.Second):
		return nil, errors.New("no message within 10 s")
	}
}

func (c *gorillaClient) ping(payload []byte) bool {
	if err := c.ws.WriteControl(gorilla.PingMessage, payload, time.Now().Add(5*time.Second)); err != nil {
		return false
	}
	select {
	case p := <-c.pongs:
		return p == string(payload)
	case <-time.After(5 * time.Second):
		return false
	}
}

func (c *gorillaClient) close(code int, reason string) int {
	var p []byte
	if code >= 0 {
		p = gorilla.FormatCloseMessage(code, reason)
	}
	if err := c.ws.WriteControl(gorilla.CloseMessage, p, time.Now().Add(5*time.Second)); err != nil {
		return -1
	}
	return c.ended()
}

func (c *gorillaClient) ended() int {
	select {
	case err := <-c.done:
		c.done <- err
		var ce *gorilla.CloseError
		if errors.As(err, &ce) {
			if ce.Code == gorilla.CloseNoStatusReceived {
				return 1005
			}
			return ce.Code
		}
		return -1
	case <-time.After(10 * time.Second):
		return 0
	}
}

func (c *gorillaClient) abort() { c.ws.Close() }

// --- coder/websocket: every Write of a message writer is one frame, so
// frag is the size of each Write. It handles control frames (a pong, the
// server's close) inside a read or the close handshake, so a read runs in
// the background only while a ping waits for its pong.

type coderClient struct {
	c       *coder.Conn
	ctx     context.Context
	stop    context.CancelFunc
	pending chan readResult // a background read, nil when none
}

type readResult struct {
	p   []byte
	err error
}

func dialCoder(t *testing.T, f *fixture, _ int) wsClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: f.tlsCfg}}
	c, _, err := coder.Dial(ctx, f.url, &coder.DialOptions{HTTPClient: hc})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	c.SetReadLimit(8 << 20)
	cc := &coderClient{c: c, ctx: ctx, stop: cancel}
	t.Cleanup(func() { cc.abort(); hc.CloseIdleConnections() })
	return cc
}

func (c *coderClient) ping(payload []byte) bool {
	// coder chooses the payload itself and checks that the pong carries it.
	if c.pending == nil {
		c.pending = make(chan readResult, 1)
		go func() {
			_, p, err := c.c.Read(c.ctx)
			c.pending <- readResult{p, err}
		}()
	}
	ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
	defer cancel()
	return c.c.Ping(ctx) == nil
}

func (c *coderClient) send(msg []byte, text bool, frag int, pingMid bool) (bool, error) {
	typ := coder.MessageBinary
	if text {
		typ = coder.MessageText
	}
	if frag == 0 && !pingMid {
		return false, c.c.Write(c.ctx, typ, msg)
	}
	if frag == 0 {
		frag = max(len(msg)/2, 1)
	}
	w, err := c.c.Writer(c.ctx, typ)
	if err != nil {
		return false, err
	}
	pong := false
	for i := 0; i < len(msg); i += frag {
		if _, err := w.Write(msg[i:min(i+frag, len(msg))]); err != nil {
			return pong, err
		}
		if pingMid && i == 0 {
			pong = c.ping(nil)
		}
	}
	return pong, w.Close()
}

func (c *coderClient) read() ([]byte, error) {
	if c.pending != nil {
		r := <-c.pending
		c.pending = nil
		return r.p, r.err
	}
	_, p, err := c.c.Read(c.ctx)
	return p, err
}

func (c *coderClient) close(code int, reason string) int {
	if code < 0 {
		code = int(coder.StatusNoStatusRcvd) // coder sends an empty close payload for it
	}
	// Close returns nil when the server answered with the same code.
	err := c.c.Close(coder.StatusCode(code), reason)
	if err == nil {
		return code
	}
	if s := coder.CloseStatus(err); s != -1 {
		return int(s)
	}
	return -1
}

func (c *coderClient) ended() int {
	for {
		_, err := c.read()
		if err == nil {
			continue
		}
		if s := coder.CloseStatus(err); s != -1 {
			return int(s)
		}
		if c.ctx.Err() != nil {
			return 0
		}
		return -1
	}
}

func (c *coderClient) abort() {
	c.c.CloseNow()
	c.stop()
	if c.pending != nil {
		<-c.pending
		c.pending = nil
	}
}

// scenario is one thing a client does, with the outcomes the server may
// give (several where the RFC leaves a choice).
type scenario struct {
	name string
	run  func(c wsClient) (outcome, error)
	frag int // client fragmentation
	want []outcome
	// onClose is what the server's handler must see: "" nil, "eof", or a
	// *ProtocolError with one of codes.
	codes []int
}

func echoScenario(name string, msg []byte, frag int, pingMid bool) scenario {
	return scenario{name: name, frag: frag,
		run: func(c wsClient) (outcome, error) {
			pong, err := c.send(msg, false, frag, pingMid)
			if err != nil {
				return outcome{}, err
			}
			back, err := c.read()
			if err != nil {
				return outcome{}, err
			}
			return outcome{Echo: summarise(back), Pong: pong}, nil
		},
		want: []outcome{{Echo: summarise(msg), Pong: pingMid}},
	}
}

func closeScenario(name string, code int, reason string, want ...int) scenario {
	s := scenario{name: name, run: func(c wsClient) (outcome, error) {
		return outcome{CloseCode: c.close(code, reason)}, nil
	}}
	for _, w := range want {
		s.want = append(s.want, outcome{CloseCode: w})
	}
	return s
}

// withCodes marks s as a violation answered with codes.
func withCodes(s scenario, codes ...int) scenario {
	s.codes = codes
	return s
}

func violation(name string, frag int, send func(c wsClient) error, codes ...int) scenario {
	s := scenario{name: name, frag: frag, codes: codes, run: func(c wsClient) (outcome, error) {
		// The server may close while the client still writes: a write
		// error is expected then; the close frame was sent before.
		_ = send(c)
		return outcome{CloseCode: c.ended()}, nil
	}}
	for _, code := range codes {
		s.want = append(s.want, outcome{CloseCode: code})
	}
	return s
}

func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
}

const diffMaxMessage = 1 << 20

func scenarios() []scenario {
	invalidUTF8 := []byte("caf\xc3\x28 \xff\xfe")
	return []scenario{
		echoScenario("binary, empty", nil, 0, false),
		echoScenario("binary, 125 bytes (7-bit length)", pattern(125), 0, false),
		echoScenario("binary, 126 bytes (16-bit length)", pattern(126), 0, false),
		echoScenario("binary, 65535 bytes", pattern(65535), 0, false),
		echoScenario("binary, 65536 bytes (64-bit length)", pattern(65536), 0, false),
		echoScenario("binary, at the size limit", pattern(diffMaxMessage), 0, false),
		echoScenario("fragmented, 4 KiB frames", pattern(100_000), 4096, false),
		echoScenario("fragmented, 16-byte frames", pattern(5000), 16, false),
		echoScenario("ping between fragments", pattern(20_000), 1024, true),
		{name: "ping and pong", run: func(c wsClient) (outcome, error) {
			return outcome{Pong: c.ping([]byte("are you there"))}, nil
		}, want: []outcome{{Pong: true}}},
		closeScenario("close 1000 normal", 1000, "bye", 1000),
		closeScenario("close 1001 going away", 1001, "", 1001),
		closeScenario("close 1008 policy", 1008, "policy", 1008),
		closeScenario("close 3000 (registered)", 3000, "", 3000),
		closeScenario("close 4999 (private)", 4999, "x", 4999),
		closeScenario("close without a status", -1, "", 1000),
		// RFC 6455 §8.1: a reason that is not UTF-8 fails the connection
		// with 1007, a protocol error for the handler.
		withCodes(closeScenario("close with an invalid UTF-8 reason", 1000, string(invalidUTF8), 1007), 1007),
		violation("text message", 0, func(c wsClient) error { _, err := c.send([]byte("hello"), true, 0, false); return err },
			CloseUnsupportedData),
		violation("fragmented text message", 2, func(c wsClient) error { _, err := c.send([]byte("hello there"), true, 2, false); return err },
			CloseUnsupportedData),
		// Text is refused whatever it holds (1003); 1007 is the RFC's code
		// for the invalid UTF-8.
		violation("text message with invalid UTF-8", 0, func(c wsClient) error { _, err := c.send(invalidUTF8, true, 0, false); return err },
			CloseUnsupportedData, 1007),
		violation("message over the size limit", 0, func(c wsClient) error {
			_, err := c.send(pattern(diffMaxMessage+1), false, 0, false)
			return err
		}, CloseTooBig),
		violation("fragmented message over the size limit", 64<<10, func(c wsClient) error {
			_, err := c.send(pattern(diffMaxMessage+64<<10), false, 64<<10, false)
			return err
		}, CloseTooBig),
	}
}

func TestDifferentialClients(t *testing.T) {
	for kind, mk := range pollerKinds() {
		for _, useTLS := range []bool{false, true} {
			name := kind
			if useTLS {
				name += "+tls"
			}
			t.Run(name, func(t *testing.T) {
				f := newFixture(t, mk, useTLS, Options{MaxMessageSize: diffMaxMessage})
				for _, sc := range scenarios() {
					t.Run(sc.name, func(t *testing.T) {
						got := map[string]outcome{}
						for _, cn := range slices.Sorted(mapKeys(clients)) {
							c := clients[cn](t, f, sc.frag)
							out, err := sc.run(c)
							if err != nil {
								t.Fatalf("%s: %v", cn, err)
							}
							got[cn] = out
							if !slices.Contains(sc.want, out) {
								t.Errorf("%s: %+v, want one of %+v", cn, out, sc.want)
							}
							checkHandlerEnd(t, f, c, cn, sc, out)
						}
						if got["gorilla"] != got["coder"] {
							t.Errorf("the clients disagree: gorilla %+v, coder %+v", got["gorilla"], got["coder"])
						}
					})
				}
			})
		}
	}
}

// checkHandlerEnd checks how the server's handler saw a connection end: a
// violation with a *ProtocolError carrying the close code sent, a close
// handshake with nil. Echo scenarios leave the connection open; it is
// dropped here, so its end is consumed too. After a close frame the
// client's socket is closed here as well: the server lingers until then.
func checkHandlerEnd(t *testing.T, f *fixture, c wsClient, client string, sc scenario, out outcome) {
	t.Helper()
	c.abort() // the client goes away, without a close frame if the connection is still open
	err := f.h.waitEnd(t)
	switch {
	case out.CloseCode == 0:
		if err == nil {
			t.Errorf("%s: handler saw a clean end of a connection dropped without a close frame", client)
		}
	case len(sc.codes) > 0:
		var pe *ProtocolError
		if !errors.As(err, &pe) || pe.Code != out.CloseCode {
			t.Errorf("%s: handler saw %v, want a ProtocolError with code %d", client, err, out.CloseCode)
		}
	case err != nil && !errors.Is(err, io.EOF):
		t.Errorf("%s: handler saw %v after a close handshake, want nil", client, err)
	}
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		keys := make([]K, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
		for _, k := range keys {
			if !yield(k) {
				return
			}
		}
	}
}
