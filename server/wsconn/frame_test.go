package wsconn

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// clientFrame builds a masked client frame.
func clientFrame(fin bool, op byte, payload []byte) []byte {
	b0 := op
	if fin {
		b0 |= 0x80
	}
	out := []byte{b0}
	switch n := len(payload); {
	case n < 126:
		out = append(out, 0x80|byte(n))
	case n <= 0xffff:
		out = binary.BigEndian.AppendUint16(append(out, 0x80|126), uint16(n))
	default:
		out = binary.BigEndian.AppendUint64(append(out, 0x80|127), uint64(n))
	}
	key := [4]byte{0x12, 0x34, 0x56, 0x78}
	out = append(out, key[:]...)
	start := len(out)
	out = append(out, payload...)
	unmask(out[start:], key)
	return out
}

type got struct {
	op byte
	p  string
}

func feedAll(t *testing.T, r *reader, chunks [][]byte) ([]got, error) {
	t.Helper()
	var out []got
	for _, c := range chunks {
		err := r.feed(append([]byte(nil), c...), func(op byte, p []byte) error {
			out = append(out, got{op, string(p)})
			return nil
		})
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func TestReaderMessages(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 70000)
	mid := bytes.Repeat([]byte("y"), 300)
	stream := cat(
		clientFrame(true, opBinary, []byte("hello")),
		clientFrame(true, opBinary, nil),
		clientFrame(false, opBinary, []byte("frag-")),
		clientFrame(true, opPing, []byte("p")), // control frames may interleave
		clientFrame(false, opContinuation, []byte("ment")),
		clientFrame(true, opContinuation, []byte("ed")),
		clientFrame(true, opBinary, mid),
		clientFrame(true, opBinary, big),
		clientFrame(true, opPong, nil),
		clientFrame(true, opClose, []byte{0x03, 0xe8}),
	)
	want := []got{{opBinary, "hello"}, {opBinary, ""}, {opPing, "p"}, {opBinary, "frag-mented"},
		{opBinary, string(mid)}, {opBinary, string(big)}, {opPong, ""}, {opClose, "\x03\xe8"}}
	for _, chunk := range []int{1, 2, 3, 7, 13, 126, 4096, len(stream)} {
		var chunks [][]byte
		for i := 0; i < len(stream); i += chunk {
			chunks = append(chunks, stream[i:min(i+chunk, len(stream))])
		}
		r := &reader{max: 1 << 20}
		out, err := feedAll(t, r, chunks)
		if err != nil {
			t.Fatalf("chunk %d: %v", chunk, err)
		}
		if len(out) != len(want) {
			t.Fatalf("chunk %d: got %d events, want %d", chunk, len(out), len(want))
		}
		for i := range want {
			if out[i] != want[i] {
				t.Errorf("chunk %d: event %d = op %#x (%d bytes), want op %#x (%d bytes)", chunk, i, out[i].op, len(out[i].p), want[i].op, len(want[i].p))
			}
		}
		if r.pend != nil || r.frag != nil {
			t.Errorf("chunk %d: reader keeps %d+%d bytes after complete frames", chunk, len(r.pend), len(r.frag))
		}
	}
}

func TestReaderViolations(t *testing.T) {
	unmasked := clientFrame(true, opBinary, []byte("x"))
	unmasked[1] &^= 0x80
	long127 := []byte{0x82, 0x80 | 127, 0x80, 0, 0, 0, 0, 0, 0, 1, 1, 2, 3, 4}
	tests := []struct {
		name   string
		in     []byte
		code   int
		reason string
	}{
		{"unmasked", unmasked, CloseProtocolError, "not masked"},
		{"reserved bits", append([]byte{0x82 | 0x40}, clientFrame(true, opBinary, nil)[1:]...), CloseProtocolError, "reserved bits"},
		{"unknown opcode", append([]byte{0x83}, clientFrame(true, opBinary, nil)[1:]...), CloseProtocolError, "unknown opcode"},
		{"text", clientFrame(true, opText, []byte("hi")), CloseUnsupportedData, "text message"},
		{"fragmented control", clientFrame(false, opPing, nil), CloseProtocolError, "fragmented control"},
		{"long control", clientFrame(true, opPing, make([]byte, 126)), CloseProtocolError, "at most 125"},
		{"lone continuation", clientFrame(true, opContinuation, []byte("x")), CloseProtocolError, "outside a fragmented"},
		{"interrupted fragment", cat(clientFrame(false, opBinary, []byte("a")), clientFrame(true, opBinary, []byte("b"))), CloseProtocolError, "before the fragmented"},
		{"too big declared", clientFrame(true, opBinary, make([]byte, 101))[:8], CloseTooBig, "exceeds the limit of 100"},
		{"too big in fragments", cat(clientFrame(false, opBinary, make([]byte, 60)), clientFrame(true, opContinuation, make([]byte, 60))), CloseTooBig, "exceeds"},
		{"length high bit", long127, CloseProtocolError, "most significant bit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &reader{max: 100}
			_, err := feedAll(t, r, [][]byte{tt.in})
			var pe *ProtocolError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a ProtocolError", err)
			}
			if pe.Code != tt.code || !bytes.Contains([]byte(pe.Reason), []byte(tt.reason)) {
				t.Errorf("got code %d %q, want %d containing %q", pe.Code, pe.Reason, tt.code, tt.reason)
			}
		})
	}
}

func TestAppendHeader(t *testing.T) {
	for _, n := range []int{0, 125, 126, 65535, 65536} {
		h := appendHeader(nil, opBinary, n)
		// Parse it back as a client would (add a mask bit and key to reuse parseHeader).
		c := append([]byte{h[0], h[1] | 0x80}, h[2:]...)
		c = append(c, 0, 0, 0, 0)
		ph, ok, err := parseHeader(c)
		if err != nil || !ok || ph.length != int64(n) || !ph.fin || ph.op != opBinary {
			t.Errorf("n=%d: header %x parsed as %+v ok=%v err=%v", n, h, ph, ok, err)
		}
	}
}

// FuzzReader: any input either fails with a ProtocolError or parses; the
// same bytes in two chunks give the same events as in one.
func FuzzReader(f *testing.F) {
	f.Add(cat(clientFrame(true, opBinary, []byte("abc")), clientFrame(true, opPing, nil)), 3)
	f.Add(cat(clientFrame(false, opBinary, []byte("ab")), clientFrame(true, opContinuation, []byte("c"))), 5)
	f.Fuzz(func(t *testing.T, in []byte, split int) {
		collect := func(chunks [][]byte) ([]got, error) {
			r := &reader{max: 1 << 16}
			var out []got
			for _, c := range chunks {
				if err := r.feed(append([]byte(nil), c...), func(op byte, p []byte) error {
					out = append(out, got{op, string(p)})
					return nil
				}); err != nil {
					return out, err
				}
			}
			return out, nil
		}
		whole, errW := collect([][]byte{in})
		if split < 0 {
			split = -split
		}
		split %= len(in) + 1
		parts, errP := collect([][]byte{in[:split], in[split:]})
		var pe *ProtocolError
		if errW != nil && !errors.As(errW, &pe) {
			t.Fatalf("non-protocol error %v", errW)
		}
		if (errW == nil) != (errP == nil) {
			t.Fatalf("whole: %v, split at %d: %v", errW, split, errP)
		}
		if errW == nil && len(whole) != len(parts) {
			t.Fatalf("whole gave %d events, split gave %d", len(whole), len(parts))
		}
	})
}
