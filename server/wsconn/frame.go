package wsconn

import (
	"encoding/binary"
	"fmt"
)

// Opcodes (RFC 6455 §5.2).
const (
	opContinuation = 0x0
	opText         = 0x1
	opBinary       = 0x2
	opClose        = 0x8
	opPing         = 0x9
	opPong         = 0xA
)

// Close codes (RFC 6455 §7.4.1 and the IANA registry) this package sends.
const (
	CloseNormal          = 1000
	CloseProtocolError   = 1002
	CloseUnsupportedData = 1003
	CloseInvalidData     = 1007 // a close reason that is not UTF-8
	ClosePolicy          = 1008 // a message too slow to arrive
	CloseTooBig          = 1009
	CloseTryAgainLater   = 1013 // shed: the server holds too many unfinished messages
)

// ProtocolError is a violation by the peer; Code is the close code it is answered with.
type ProtocolError struct {
	Code   int
	Reason string
}

func (e *ProtocolError) Error() string {
	return fmt.Sprintf("websocket protocol error: %s (close code %d)", e.Reason, e.Code)
}

func protoErr(code int, format string, args ...any) error {
	return &ProtocolError{Code: code, Reason: fmt.Sprintf(format, args...)}
}

// header is one client frame header.
type header struct {
	fin    bool
	op     byte
	length int64
	mask   [4]byte
	size   int // bytes of header, mask key included
}

// parseHeader parses a client frame header at the start of b; ok is false
// when b does not hold all of it yet.
func parseHeader(b []byte) (h header, ok bool, err error) {
	if len(b) < 2 {
		return h, false, nil
	}
	b0, b1 := b[0], b[1]
	if b0&0x70 != 0 {
		return h, false, protoErr(CloseProtocolError, "reserved bits set in a frame header (no extension was negotiated)")
	}
	h.fin = b0&0x80 != 0
	h.op = b0 & 0x0f
	switch h.op {
	case opContinuation, opText, opBinary, opClose, opPing, opPong:
	default:
		return h, false, protoErr(CloseProtocolError, "unknown opcode %#x", h.op)
	}
	if b1&0x80 == 0 {
		return h, false, protoErr(CloseProtocolError, "client frame is not masked")
	}
	n := int64(b1 & 0x7f)
	h.size = 2
	switch n {
	case 126:
		if len(b) < 4 {
			return h, false, nil
		}
		n = int64(binary.BigEndian.Uint16(b[2:]))
		h.size = 4
	case 127:
		if len(b) < 10 {
			return h, false, nil
		}
		u := binary.BigEndian.Uint64(b[2:])
		if u>>63 != 0 {
			return h, false, protoErr(CloseProtocolError, "frame length has its most significant bit set")
		}
		n = int64(u)
		h.size = 10
	}
	if h.op >= opClose {
		if !h.fin {
			return h, false, protoErr(CloseProtocolError, "fragmented control frame")
		}
		if n > 125 {
			return h, false, protoErr(CloseProtocolError, "control frame of %d bytes (at most 125)", n)
		}
	}
	h.length = n
	if len(b) < h.size+4 {
		return h, false, nil
	}
	copy(h.mask[:], b[h.size:])
	h.size += 4
	return h, true, nil
}

// unmask XORs p with the frame's mask key, in place.
func unmask(p []byte, key [4]byte) {
	for i := range p {
		p[i] ^= key[i&3]
	}
}

// appendHeader appends an unmasked (server) frame header for a final frame.
func appendHeader(dst []byte, op byte, n int) []byte {
	dst = append(dst, 0x80|op)
	switch {
	case n < 126:
		return append(dst, byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(dst, 126), uint16(n))
	default:
		return binary.BigEndian.AppendUint64(append(dst, 127), uint64(n))
	}
}

// reader reassembles a connection's messages from bytes as they arrive, in
// any chunking. Between reads it keeps only the bytes of an unfinished frame
// and the parts of an unfinished fragmented message: nothing for an idle
// connection.
type reader struct {
	max  int64  // largest message accepted
	pend []byte // bytes of an incomplete frame
	frag []byte // a fragmented message so far
	in   bool   // inside a fragmented message
}

// feed parses data, which it may modify (payloads are unmasked in place),
// and calls emit for every complete binary message and every control frame,
// in order. A payload is valid only during the emit call. An error from emit
// or a protocol violation stops it.
func (r *reader) feed(data []byte, emit func(op byte, payload []byte) error) error {
	buf := data
	if len(r.pend) > 0 {
		r.pend = r.grow(r.pend, data)
		buf = r.pend
	}
	for len(buf) > 0 {
		h, ok, err := parseHeader(buf)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if h.op < opClose {
			total := h.length
			if r.in {
				total += int64(len(r.frag))
			}
			if total > r.max {
				return protoErr(CloseTooBig, "message of at least %d bytes exceeds the limit of %d", total, r.max)
			}
		}
		if int64(len(buf)-h.size) < h.length {
			break
		}
		end := h.size + int(h.length)
		payload := buf[h.size:end]
		unmask(payload, h.mask)
		buf = buf[end:]
		if err := r.frame(h, payload, emit); err != nil {
			return err
		}
	}
	r.keep(buf)
	return nil
}

func (r *reader) frame(h header, payload []byte, emit func(byte, []byte) error) error {
	switch h.op {
	case opText:
		return protoErr(CloseUnsupportedData, "text message (OpAMP messages are binary)")
	case opBinary:
		if r.in {
			return protoErr(CloseProtocolError, "new message before the fragmented one ended")
		}
		if h.fin {
			return emit(opBinary, payload)
		}
		r.in = true
		r.frag = append([]byte(nil), payload...)
		return nil
	case opContinuation:
		if !r.in {
			return protoErr(CloseProtocolError, "continuation frame outside a fragmented message")
		}
		r.frag = append(r.frag, payload...)
		if !h.fin {
			return nil
		}
		msg := r.frag
		r.frag, r.in = nil, false
		return emit(opBinary, msg)
	default:
		return emit(h.op, payload)
	}
}

// held is the memory the reader keeps for unfinished frames and messages
// (allocated, not only filled).
func (r *reader) held() int { return cap(r.pend) + cap(r.frag) }

// received is what has arrived of unfinished frames and messages.
func (r *reader) received() int { return len(r.pend) + len(r.frag) }

// unfinished reports whether a frame or a fragmented message has begun.
func (r *reader) unfinished() bool { return len(r.pend) > 0 || r.in }

// grow appends data to pend. Capacity doubles as usual, but never past the
// end of the frame pend holds when its header is known, so a large frame
// costs its own size and not up to twice that.
func (r *reader) grow(pend, data []byte) []byte {
	need := len(pend) + len(data)
	if need <= cap(pend) {
		return append(pend, data...)
	}
	want := max(2*cap(pend), need)
	if h, ok, err := parseHeader(pend); ok && err == nil && h.length <= r.max {
		if end := h.size + int(h.length); end >= need && end < want {
			want = end
		}
	}
	out := make([]byte, len(pend), want)
	copy(out, pend)
	return append(out, data...)
}

// release drops what the reader holds (the connection ended).
func (r *reader) release() { r.pend, r.frag, r.in = nil, nil, false }

// keep stores the unparsed rest for the next feed, releasing memory when
// nothing is left.
func (r *reader) keep(rest []byte) {
	switch {
	case len(rest) == 0:
		r.pend = nil
	case len(r.pend) > 0 && &rest[len(rest)-1] == &r.pend[len(r.pend)-1] && cap(r.pend) <= 4*len(rest)+4096:
		n := copy(r.pend, rest) // rest is a suffix of pend: move it to the front
		r.pend = r.pend[:n]
	default:
		r.pend = append(make([]byte, 0, len(rest)+512), rest...)
	}
}
