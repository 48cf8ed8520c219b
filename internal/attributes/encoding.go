package attributes

import (
	"encoding/binary"
	"strings"

	"github.com/google/uuid"
)

// How a view writes each value in its data: a uvarint header h, then
//
//	h&1 == 1: nothing; the value is number h>>1 of the dictionary of
//	          repeated values (see dictionary);
//	h&3 == 0: the h>>2 bytes of the value (a value read is a substring
//	          of data);
//	h&3 == 2: a UUID in its canonical text (36 bytes, lowercase), as its
//	          16 bytes; h>>2 is 0.
//
// Instance UIDs are most of the bytes a fleet does not repeat.
const (
	formRef    = 1
	formInline = 0
	formUUID   = 2
)

// encodedLen is how many bytes encode writes for val (ref: its number in
// the dictionary plus one, 0 when it has none).
func encodedLen(val string, ref uint32) int {
	switch {
	case ref > 0:
		return uvarintLen(uint64(ref-1)<<1 | formRef)
	case isUUID(val):
		return 1 + 16
	}
	return uvarintLen(uint64(len(val))<<2|formInline) + len(val)
}

// encode writes val as encodedLen says.
func encode(b *strings.Builder, val string, ref uint32) {
	var buf [binary.MaxVarintLen64]byte
	switch {
	case ref > 0:
		b.Write(binary.AppendUvarint(buf[:0], uint64(ref-1)<<1|formRef))
	case isUUID(val):
		u := uuid.MustParse(val)
		b.WriteByte(formUUID)
		b.Write(u[:])
	default:
		b.Write(binary.AppendUvarint(buf[:0], uint64(len(val))<<2|formInline))
		b.WriteString(val)
	}
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

// isUUID reports whether s is a UUID in canonical lowercase text, the
// only text the UUID form gives back.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := range len(s) {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
				return false
			}
		}
	}
	return true
}

// header reads the header at off: h and the offset past it.
func (v *view) header(off int) (uint64, int) {
	var h uint64
	for shift := 0; ; shift += 7 {
		b := v.data[off]
		off++
		h |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return h, off
		}
	}
}

// at reads the value at off: the value and the offset of the next. Only a
// UUID's text is built anew.
func (v *view) at(off int) (string, int) {
	h, off := v.header(off)
	switch {
	case h&1 == formRef:
		return values.value(uint32(h >> 1)), off
	case h&3 == formUUID:
		return uuid.UUID([]byte(v.data[off : off+16])).String(), off + 16
	}
	n := int(h >> 2)
	return v.data[off : off+n], off + n
}

// next is the offset of the value after the one at off, and the bytes
// that encode the one at off.
func (v *view) next(off int) (int, string) {
	h, p := v.header(off)
	switch {
	case h&1 == formRef:
	case h&3 == formUUID:
		p += 16
	default:
		p += int(h >> 2)
	}
	return p, v.data[off:p]
}
