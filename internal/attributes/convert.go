package attributes

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math"
	"strconv"

	"github.com/open-telemetry/opamp-go/protobufs"
)

// String converts an AnyValue to its string form: strings as they are, bools
// as true/false, ints in decimal, doubles in their shortest form, bytes as
// standard Base64, arrays and key-value lists as JSON. A nil or empty value is "".
func String(v *protobufs.AnyValue) string {
	if v == nil {
		return ""
	}
	switch x := v.Value.(type) {
	case *protobufs.AnyValue_StringValue:
		return x.StringValue
	case *protobufs.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	case *protobufs.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *protobufs.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	case *protobufs.AnyValue_BytesValue:
		return base64.StdEncoding.EncodeToString(x.BytesValue)
	case *protobufs.AnyValue_ArrayValue, *protobufs.AnyValue_KvlistValue:
		return marshalJSON(natural(v))
	default:
		return ""
	}
}

// natural maps an AnyValue to the Go value whose JSON form is its natural
// JSON type. Doubles JSON cannot carry (NaN, ±Inf) become their string form,
// so the conversion never fails.
func natural(v *protobufs.AnyValue) any {
	if v == nil {
		return nil
	}
	switch x := v.Value.(type) {
	case *protobufs.AnyValue_StringValue:
		return x.StringValue
	case *protobufs.AnyValue_BoolValue:
		return x.BoolValue
	case *protobufs.AnyValue_IntValue:
		return x.IntValue
	case *protobufs.AnyValue_DoubleValue:
		if math.IsNaN(x.DoubleValue) || math.IsInf(x.DoubleValue, 0) {
			return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
		}
		return x.DoubleValue
	case *protobufs.AnyValue_BytesValue:
		return base64.StdEncoding.EncodeToString(x.BytesValue)
	case *protobufs.AnyValue_ArrayValue:
		out := []any{}
		if x.ArrayValue != nil {
			for _, e := range x.ArrayValue.Values {
				out = append(out, natural(e))
			}
		}
		return out
	case *protobufs.AnyValue_KvlistValue:
		out := map[string]any{}
		if x.KvlistValue != nil {
			for _, kv := range x.KvlistValue.Values {
				if kv == nil {
					continue
				}
				out[kv.Key] = natural(kv.Value) // later duplicates win
			}
		}
		return out
	default:
		return nil
	}
}

func marshalJSON(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// natural() only produces JSON-safe values; keep the conversion total anyway.
		return ""
	}
	return string(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}
