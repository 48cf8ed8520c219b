package providerwire

import "fmt"

// Bounds of a snapshot's JSON shape, checked on the raw bytes before
// anything is decoded: a tree deeper or with more values than this is
// refused without building it.
const (
	// MaxDepth is the deepest nesting of objects and arrays in a snapshot,
	// the snapshot object itself counting 1: the envelope (snapshot,
	// dynamic, provider, mapping list, mapping) takes 5, leaving room for
	// nested variables and an add_fields processor's fields.
	MaxDepth = 16
	// MaxValues is the most JSON values (objects, arrays and scalars) one
	// snapshot may hold.
	MaxValues = 1 << 16
)

// ShapeError is a snapshot refused for its shape.
type ShapeError struct{ Reason string }

func (e *ShapeError) Error() string { return e.Reason }

// CheckShape reports whether data, read as JSON, nests at most MaxDepth
// deep and holds at most MaxValues values. It allocates nothing and
// decodes nothing; malformed JSON is left for the decoder to report.
func CheckShape(data []byte) error {
	depth, values := 0, 0
	inString, escaped, inScalar := false, false, false
	for _, c := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '{', '[':
			inScalar = false
			depth++
			values++
			if depth > MaxDepth {
				return &ShapeError{Reason: fmt.Sprintf("nested more than %d deep", MaxDepth)}
			}
		case '}', ']':
			inScalar = false
			depth--
		case '"':
			inString = true
			values++ // a key or a string value: both cost a decoded string
		case ',', ':', ' ', '\t', '\r', '\n':
			inScalar = false
		default:
			if !inScalar { // a number, true, false or null starts
				inScalar = true
				values++
			}
		}
		if values > MaxValues {
			return &ShapeError{Reason: fmt.Sprintf("more than %d JSON values", MaxValues)}
		}
	}
	return nil
}
