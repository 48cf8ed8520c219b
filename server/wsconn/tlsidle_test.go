package wsconn

import (
	"crypto/tls"
	"testing"
)

// tlsIdleCaps are the capacities of c's record and handshake buffers.
func tlsIdleCaps(c *tls.Conn) (raw, hand int) {
	r, _, h := tlsBuffers(c)
	return r.Cap(), h.Cap()
}

// The idle release depends on crypto/tls's read buffers being where and
// what they were: a Go release that moves them must fail here rather
// than let every idle TLS agent cost 4–5 KiB more in silence.
func TestTLSIdleLayout(t *testing.T) {
	if !tlsIdleRelease {
		t.Fatal("crypto/tls.Conn no longer has rawInput and hand (bytes.Buffer) and input (bytes.Reader): idle TLS sessions keep their read buffers; update tlsidle.go")
	}
}
