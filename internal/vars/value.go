package vars

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The engine works on a closed set of value types, produced by Normalize:
// nil, string, bool, int64, uint64 (only above MaxInt64), float64, []any and
// map[string]any. Keeping the set closed makes equality type-aware and
// formatting exact.

// Normalize converts decoded YAML or JSON (or hand-built Go values) to the
// engine's value types. Integers become int64, map keys become strings.
// Dotted keys are kept as they are; see Nest for provider data.
func Normalize(v any) (any, error) {
	return normalize(v, "")
}

func normalize(v any, path string) (any, error) {
	switch x := v.(type) {
	case nil, string, bool, int64, float64:
		return x, nil
	case int:
		return int64(x), nil
	case int8:
		return int64(x), nil
	case int16:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case uint:
		return normUint(uint64(x)), nil
	case uint8:
		return int64(x), nil
	case uint16:
		return int64(x), nil
	case uint32:
		return int64(x), nil
	case uint64:
		return normUint(x), nil
	case float32:
		return float64(x), nil
	case json.Number:
		return numberValue(x)
	case time.Time:
		return x.Format(time.RFC3339Nano), nil
	case []byte:
		return base64.StdEncoding.EncodeToString(x), nil
	case []any:
		return normalizeSlice(x, path)
	case []map[string]any:
		return normalizeSlice(x, path)
	case []string:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = e
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			n, err := normalize(e, joinPath(path, k))
			if err != nil {
				return nil, err
			}
			out[k] = n
		}
		return out, nil
	case map[string]string:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = e
		}
		return out, nil
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			ks, err := keyString(k)
			if err != nil {
				return nil, &RenderError{Path: path, Msg: err.Error()}
			}
			n, err := normalize(e, joinPath(path, ks))
			if err != nil {
				return nil, err
			}
			out[ks] = n
		}
		return out, nil
	default:
		return nil, &RenderError{Path: path, Msg: fmt.Sprintf("unsupported value type %T", v)}
	}
}

func normUint(u uint64) any {
	if u <= math.MaxInt64 {
		return int64(u)
	}
	return u
}

// numberValue keeps JSON integers integers and everything else float64.
func numberValue(n json.Number) (any, error) {
	s := n.String()
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i, nil
		}
		if u, err := strconv.ParseUint(s, 10, 64); err == nil {
			return u, nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Errorf("number %s: %w", s, err)
	}
	return f, nil
}

func keyString(k any) (string, error) {
	switch x := k.(type) {
	case string:
		return x, nil
	case nil:
		return "null", nil
	case bool, int, int64, uint64, float64:
		n, _ := normalize(x, "")
		return scalarText(n), nil
	default:
		return "", fmt.Errorf("unsupported map key type %T", k)
	}
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// Nest turns dotted keys of provider data into nested maps, at every level:
// {"app.name": "x"} becomes {"app": {"name": "x"}}. Keys are applied in
// sorted order; a dotted key that needs a map where a scalar was set replaces
// the scalar, so the result does not depend on map iteration order.
// v must already be normalized.
func Nest(v any) any {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make(map[string]any, len(x))
		for _, k := range keys {
			val := Nest(x[k])
			if !strings.Contains(k, ".") {
				if old, ok := out[k].(map[string]any); ok {
					if nv, ok := val.(map[string]any); ok {
						mergeInto(old, nv)
						continue
					}
				}
				out[k] = val
				continue
			}
			segs := strings.Split(k, ".")
			m := out
			for _, s := range segs[:len(segs)-1] {
				next, ok := m[s].(map[string]any)
				if !ok {
					next = map[string]any{}
					m[s] = next
				}
				m = next
			}
			last := segs[len(segs)-1]
			if old, ok := m[last].(map[string]any); ok {
				if nv, ok := val.(map[string]any); ok {
					mergeInto(old, nv)
					continue
				}
			}
			m[last] = val
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Nest(e)
		}
		return out
	default:
		return v
	}
}

func mergeInto(dst, src map[string]any) {
	for k, v := range src {
		if d, ok := dst[k].(map[string]any); ok {
			if s, ok := v.(map[string]any); ok {
				mergeInto(d, s)
				continue
			}
		}
		dst[k] = v
	}
}

// scalarText formats a scalar for interpolation. Composite values go through
// compactJSON.
func scalarText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case float64:
		return formatFloat(x)
	default:
		s, err := compactJSON(x)
		if err != nil {
			return fmt.Sprint(x)
		}
		return s
	}
}

// formatFloat prints f exactly as encoding/json does (shortest round-trip,
// exponent outside [1e-6, 1e21)). NaN and infinities, which JSON cannot
// carry, print as strconv does.
func formatFloat(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b := strconv.AppendFloat(nil, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return string(b)
}

// compactJSON encodes v with sorted keys and without HTML escaping.
func compactJSON(v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

// Equal is structural, type-aware equality over normalized values:
// int64(5044) and "5044" differ, as do int64(2) and float64(2).
func Equal(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case int64:
		y, ok := b.(int64)
		return ok && x == y
	case uint64:
		y, ok := b.(uint64)
		return ok && x == y
	case float64:
		y, ok := b.(float64)
		return ok && (x == y || (math.IsNaN(x) && math.IsNaN(y)))
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !Equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !Equal(xv, yv) {
				return false
			}
		}
		return true
	default:
		return false
	}
}

// deepCopy copies maps and lists so rendered documents never alias provider
// data.
func deepCopy(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopy(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = deepCopy(e)
		}
		return out
	default:
		return v
	}
}

// normalizeSlice normalises each element of a list, naming its index in errors.
func normalizeSlice[T any](xs []T, path string) (any, error) {
	out := make([]any, len(xs))
	for i, e := range xs {
		n, err := normalize(e, path+"["+strconv.Itoa(i)+"]")
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

// ScalarText is the text a value interpolates as: a string itself, a
// number or boolean in its canonical form, a list or map as compact JSON.
func ScalarText(v any) string { return scalarText(v) }
