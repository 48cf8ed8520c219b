package wsconn

import (
	"bytes"
	"crypto/tls"
	"reflect"
	"unsafe"
)

// An idle TLS session keeps two read buffers at the capacity of the
// largest record and handshake message it ever read: its record buffer
// (the ClientHello with its ML-KEM key share, then an agent's first
// report: about 3 KiB) and its handshake buffer (the ClientHello: about
// 1.5 KiB). crypto/tls never shrinks them and has no call to. For
// myriarchd, whose agents are idle between heartbeats, that is half of
// what a TLS session costs and more than all the rest of an agent.
//
// releaseIdleTLS drops them once a session has nothing buffered: the
// poller calls it after a read found the socket empty, with the
// connection's service lock held, so no Read of the session runs
// meanwhile (its writes and Close touch neither buffer). The next record
// is read into a buffer of its own size. The fields are found by name
// and type once; on a Go whose crypto/tls no longer has them as expected,
// nothing is released (tlsIdleRelease says so, and a test fails).

// tlsIdleFields are the offsets of tls.Conn's read buffers.
type tlsIdleFields struct {
	rawInput, input, hand uintptr
}

// tlsIdle holds the offsets; tlsIdleRelease is false when crypto/tls's
// layout is not the one expected.
var tlsIdle, tlsIdleRelease = findTLSIdleFields()

func findTLSIdleFields() (tlsIdleFields, bool) {
	t := reflect.TypeFor[tls.Conn]()
	offset := func(name string, want reflect.Type) (uintptr, bool) {
		f, ok := t.FieldByName(name)
		if !ok || f.Type != want || len(f.Index) != 1 {
			return 0, false
		}
		return f.Offset, true
	}
	var fs tlsIdleFields
	var ok1, ok2, ok3 bool
	fs.rawInput, ok1 = offset("rawInput", reflect.TypeFor[bytes.Buffer]())
	fs.input, ok2 = offset("input", reflect.TypeFor[bytes.Reader]())
	fs.hand, ok3 = offset("hand", reflect.TypeFor[bytes.Buffer]())
	return fs, ok1 && ok2 && ok3
}

// releaseIdleTLS lets go of c's empty read buffers. The caller must be the
// only reader of c (the poller's service lock).
func releaseIdleTLS(c *tls.Conn) {
	if !tlsIdleRelease {
		return
	}
	raw, in, hand := tlsBuffers(c)
	// input reads from rawInput's array: both go, or neither.
	if raw.Len() == 0 && in.Len() == 0 && raw.Cap() > 0 {
		*raw = bytes.Buffer{}
		*in = bytes.Reader{}
	}
	if hand.Len() == 0 && hand.Cap() > 0 {
		*hand = bytes.Buffer{}
	}
}

// tlsBuffers are c's record buffer, the reader of its decrypted data and
// its handshake buffer (only when tlsIdleRelease).
func tlsBuffers(c *tls.Conn) (raw *bytes.Buffer, in *bytes.Reader, hand *bytes.Buffer) {
	base := unsafe.Pointer(c)
	return (*bytes.Buffer)(unsafe.Add(base, tlsIdle.rawInput)), (*bytes.Reader)(unsafe.Add(base, tlsIdle.input)),
		(*bytes.Buffer)(unsafe.Add(base, tlsIdle.hand))
}
