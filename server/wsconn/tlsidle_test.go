package wsconn

import (
	"bytes"
	"crypto/tls"
	"testing"
	"unsafe"
)

// tlsIdleCaps are the capacities of c's record and handshake buffers.
func tlsIdleCaps(c *tls.Conn) (raw, hand int) {
	base := unsafe.Pointer(c)
	return (*bytes.Buffer)(unsafe.Add(base, tlsIdle.rawInput)).Cap(), (*bytes.Buffer)(unsafe.Add(base, tlsIdle.hand)).Cap()
}

// The idle release depends on crypto/tls's read buffers being where and
// what they were: a Go release that moves them must fail here rather
// than let every idle TLS agent cost 4–5 KiB more in silence.
func TestTLSIdleLayout(t *testing.T) {
	if !tlsIdleRelease {
		t.Fatal("crypto/tls.Conn no longer has rawInput and hand (bytes.Buffer) and input (bytes.Reader): idle TLS sessions keep their read buffers; update tlsidle.go")
	}
}
