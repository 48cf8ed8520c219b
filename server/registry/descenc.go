package registry

import (
	"cmp"
	"maps"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/myriarch/myriarch/internal/attributes"
)

// encodeDescription is what the store keeps of a description: the kept
// attributes as strings, keys sorted. Applying the attribute rules to it
// again gives the same lists, so a restart rebuilds the same view.
func encodeDescription(id, non map[string]string) []byte {
	return appendDescription(kvsOf(id), kvsOf(non))
}

// encodedDesc is the description its row holds (nil without one).
func (a *agent) encodedDesc() []byte {
	if !a.hasDesc {
		return nil
	}
	id := a.desc.Identifying().AppendTo(nil)
	non := a.desc.NonIdentifying().AppendTo(nil)
	byKey := func(x, y attributes.KeyValue) int { return cmp.Compare(x.Key, y.Key) }
	slices.SortFunc(id, byKey)
	slices.SortFunc(non, byKey)
	return appendDescription(id, non)
}

func kvsOf(m map[string]string) []attributes.KeyValue {
	out := make([]attributes.KeyValue, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, attributes.KeyValue{Key: k, Value: m[k]})
	}
	return out
}

// appendDescription encodes an AgentDescription of the two lists (each
// sorted by key) with string values, as proto.Marshal does, in one
// allocation: a row is written with it every time its agent changes, and
// building the message to marshal cost several allocations per attribute.
// Kept attributes are cleaned (attributes.Clean: valid UTF-8, which
// proto.Marshal requires), so the bytes are always what it would give.
func appendDescription(id, non []attributes.KeyValue) []byte {
	n := 0
	for _, list := range [][]attributes.KeyValue{id, non} {
		for _, kv := range list {
			n += 1 + protowire.SizeBytes(keyValueSize(kv))
		}
	}
	b := make([]byte, 0, n)
	for i, list := range [][]attributes.KeyValue{id, non} {
		field := protowire.Number(i + 1) // identifying_attributes, non_identifying_attributes
		for _, kv := range list {
			b = protowire.AppendTag(b, field, protowire.BytesType)
			b = protowire.AppendVarint(b, uint64(keyValueSize(kv)))
			if kv.Key != "" { // proto3: an empty string is not encoded
				b = protowire.AppendTag(b, 1, protowire.BytesType)
				b = protowire.AppendString(b, kv.Key)
			}
			b = protowire.AppendTag(b, 2, protowire.BytesType) // value: AnyValue
			b = protowire.AppendVarint(b, uint64(1+protowire.SizeBytes(len(kv.Value))))
			b = protowire.AppendTag(b, 1, protowire.BytesType) // string_value (a oneof: encoded even when empty)
			b = protowire.AppendString(b, kv.Value)
		}
	}
	return b
}

// keyValueSize is the encoded size of a KeyValue with a string value.
func keyValueSize(kv attributes.KeyValue) int {
	n := 1 + protowire.SizeBytes(1+protowire.SizeBytes(len(kv.Value)))
	if kv.Key != "" {
		n += 1 + protowire.SizeBytes(len(kv.Key))
	}
	return n
}
