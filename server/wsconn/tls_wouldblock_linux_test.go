//go:build linux

package wsconn

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// lockstepConn writes each Write in pieces of a few bytes and waits, after
// each piece, until the test has let the reader look at it: the reader then
// sees every TLS record arrive in parts.
type lockstepConn struct {
	net.Conn
	piece   int
	written chan struct{} // a piece is on the wire
	proceed chan struct{} // the reader has read what arrived
	free    atomic.Bool   // writes go through at once
}

func (c *lockstepConn) Write(p []byte) (int, error) {
	if c.free.Load() {
		return c.Conn.Write(p)
	}
	n := 0
	for len(p) > 0 {
		k := min(c.piece, len(p))
		m, err := c.Conn.Write(p[:k])
		n += m
		if err != nil {
			return n, err
		}
		p = p[k:]
		c.written <- struct{}{}
		<-c.proceed
	}
	return n, nil
}

// The poller reads a TLS session through a socket that answers
// errWouldBlock when nothing has arrived (sockConn in non-blocking mode).
// It relies on crypto/tls keeping a partial record across that temporary
// error and continuing with the next Read, and lets go of the session's
// read buffers whenever nothing is buffered. This fails if crypto/tls ever
// makes the error sticky or drops the partial record, or if a release
// loses a byte.
func TestTLSToleratesWouldBlock(t *testing.T) {
	hs := httptest.NewUnstartedServer(nil) // for its certificate
	hs.StartTLS()
	serverCfg := hs.TLS.Clone()
	clientTLS := hs.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	clientTLS.ServerName = "example.com" // httptest's certificate names it
	hs.Close()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	tln := tls.NewListener(NewListener(ln), serverCfg)
	accepted := make(chan *tls.Conn, 1)
	go func() {
		c, err := tln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		tc := c.(*tls.Conn)
		if tc.Handshake() != nil {
			close(accepted)
			return
		}
		accepted <- tc
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	ls := &lockstepConn{Conn: raw, piece: 1 << 20, written: make(chan struct{}, 1), proceed: make(chan struct{})}
	client := tls.Client(ls, clientTLS)
	defer client.Close()
	// The handshake goes through blocking reads, as under net/http.
	hsDone := make(chan error, 1)
	go func() { hsDone <- client.Handshake() }()
	for done := false; !done; {
		select {
		case <-ls.written:
			ls.proceed <- struct{}{}
		case err := <-hsDone:
			if err != nil {
				t.Fatal(err)
			}
			done = true
		}
	}
	server, ok := <-accepted
	if !ok {
		t.Fatal("the server side of the TLS session did not come up")
	}
	defer server.Close()
	sc, ok := server.NetConn().(*sockConn)
	if !ok {
		t.Fatalf("the TLS session runs over %T, want the listener's *sockConn", server.NetConn())
	}
	sc.nonblock.Store(true) // what the poller does when it takes the session over
	var fd int
	sc.raw.Control(func(f uintptr) { fd = int(f) })

	// The client sends messages that make records of every size class,
	// five bytes at a time; after each piece the server reads until its
	// socket would block, as a poller worker does.
	ls.piece = 5
	var sent bytes.Buffer
	for _, n := range []int{1, 100, 16 << 10, 40 << 10} { // 40 KiB spans several records
		sent.Write(pattern(n))
	}
	writeDone := make(chan error, 1)
	go func() {
		_, err := client.Write(sent.Bytes())
		writeDone <- err
	}()
	var got bytes.Buffer
	buf := make([]byte, 4096)
	wouldBlocks, pieces, released := 0, 0, 0
	deadline := time.Now().Add(time.Minute)
	for got.Len() < sent.Len() {
		if time.Now().After(deadline) {
			t.Fatalf("after %d pieces and %d would-block reads the server has %d of %d bytes", pieces, wouldBlocks, got.Len(), sent.Len())
		}
		select {
		case <-ls.written:
			pieces++
		case err := <-writeDone:
			t.Fatalf("client write ended early: %v", err)
		}
		// Wait until the piece is readable, then read until would-block.
		if _, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 5000); err != nil && !errors.Is(err, unix.EINTR) {
			t.Fatal(err)
		}
		for {
			n, err := server.Read(buf)
			got.Write(buf[:n])
			if err == nil {
				continue
			}
			if !isWouldBlock(err) {
				t.Fatalf("server read after %d bytes: %v; want data or the would-block error (crypto/tls made it sticky?)", got.Len(), err)
			}
			wouldBlocks++
			// As the poller does: an empty session lets go of its buffers
			// (never of a partial record).
			if raw, _ := tlsIdleCaps(server); raw > 0 {
				releaseIdleTLS(server)
				if raw, _ := tlsIdleCaps(server); raw == 0 {
					released++
				}
			}
			break
		}
		ls.proceed <- struct{}{}
	}
	if err := <-writeDone; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), sent.Bytes()) {
		t.Fatalf("the server read %d bytes that differ from the %d sent", got.Len(), sent.Len())
	}
	if records := 4; wouldBlocks <= records {
		t.Fatalf("%d would-block reads for %d pieces: the records did not arrive in parts", wouldBlocks, pieces)
	}
	if released == 0 || released >= wouldBlocks {
		t.Fatalf("the read buffers were released %d times in %d would-block reads: want at each record's end only", released, wouldBlocks)
	}
	// The session is intact both ways after hundreds of would-block reads.
	ls.free.Store(true)
	if _, err := server.Write([]byte("still here")); err != nil {
		t.Fatal(err)
	}
	reply := make([]byte, 10)
	client.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(client, reply); err != nil || string(reply) != "still here" {
		t.Fatalf("client read %q, %v", reply, err)
	}
	t.Logf("%d bytes in %d pieces of 5 bytes, %d would-block reads, buffers released %d times", sent.Len(), pieces, wouldBlocks, released)
}
