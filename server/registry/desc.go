package registry

import (
	"unicode/utf8"

	"github.com/open-telemetry/opamp-go/protobufs"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/myriarch/myriarch/internal/intern"
)

// descDecoder reads stored AgentDescriptions at start-up. Stored
// descriptions are what agents reported: attribute lists of string values.
// Those it decodes itself, into reused message structs and with the
// strings that repeat across agents (keys, "linux", versions) shared, which
// is several times cheaper than proto.Unmarshal and leaves one copy of each
// common string for the whole fleet. Anything else (other value types,
// unknown fields, invalid UTF-8, a field sent twice) goes to proto.Unmarshal,
// so the result is always what proto.Unmarshal gives. Not safe for
// concurrent use: one per goroutine.
type descDecoder struct {
	entries []descEntry
	kvs     []protobufs.KeyValue
	vals    []protobufs.AnyValue
	strs    []protobufs.AnyValue_StringValue
	id, non []*protobufs.KeyValue
	shared  intern.Table
}

func newDescDecoder() *descDecoder { return &descDecoder{} }

// decode returns the description in b. The result (and its lists) is valid
// until the next call; the strings in it may be kept.
func (dd *descDecoder) decode(b []byte) (*protobufs.AgentDescription, error) {
	if d, ok := dd.fast(b); ok {
		return d, nil
	}
	var d protobufs.AgentDescription
	if err := proto.Unmarshal(b, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

func (dd *descDecoder) fast(b []byte) (*protobufs.AgentDescription, bool) {
	dd.kvs, dd.vals, dd.strs = dd.kvs[:0], dd.vals[:0], dd.strs[:0]
	dd.id, dd.non = dd.id[:0], dd.non[:0]
	entries := dd.entries[:0]
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || (num != 1 && num != 2) || typ != protowire.BytesType {
			return nil, false
		}
		b = b[n:]
		kv, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return nil, false
		}
		b = b[n:]
		e := descEntry{list: int(num), val: -1, str: -1}
		var seenKey, seenVal bool
		for len(kv) > 0 {
			num, typ, n := protowire.ConsumeTag(kv)
			if n < 0 || typ != protowire.BytesType || (num != 1 && num != 2) {
				return nil, false
			}
			kv = kv[n:]
			v, n := protowire.ConsumeBytes(kv)
			if n < 0 {
				return nil, false
			}
			kv = kv[n:]
			if num == 1 {
				if seenKey || !utf8.Valid(v) {
					return nil, false
				}
				seenKey, e.key = true, dd.shared.Bytes(v)
				continue
			}
			if seenVal {
				return nil, false // proto merges repeated messages
			}
			seenVal = true
			e.val = len(dd.vals)
			dd.vals = append(dd.vals, protobufs.AnyValue{})
			if len(v) == 0 {
				continue // an empty AnyValue: no oneof set
			}
			num, typ, n = protowire.ConsumeTag(v)
			if n < 0 || num != 1 || typ != protowire.BytesType {
				return nil, false
			}
			s, m := protowire.ConsumeBytes(v[n:])
			if m < 0 || n+m != len(v) || !utf8.Valid(s) {
				return nil, false
			}
			e.str = len(dd.strs)
			dd.strs = append(dd.strs, protobufs.AnyValue_StringValue{StringValue: dd.shared.Bytes(s)})
		}
		entries = append(entries, e)
	}
	dd.entries = entries
	for _, e := range entries {
		dd.kvs = append(dd.kvs, protobufs.KeyValue{Key: e.key})
	}
	for i, e := range entries {
		kv := &dd.kvs[i]
		if e.val >= 0 {
			kv.Value = &dd.vals[e.val]
			if e.str >= 0 {
				kv.Value.Value = &dd.strs[e.str]
			}
		}
		if e.list == 1 {
			dd.id = append(dd.id, kv)
		} else {
			dd.non = append(dd.non, kv)
		}
	}
	return &protobufs.AgentDescription{IdentifyingAttributes: dd.id, NonIdentifyingAttributes: dd.non}, true
}

// descEntry is one decoded attribute. Pointers into the decoder's kvs, vals
// and strs are taken only once all are appended (growing a slice moves its
// elements), so entries refer to them by index.
type descEntry struct {
	list int // 1 identifying, 2 non-identifying
	key  string
	val  int // index in vals, -1 without a value
	str  int // index in strs, -1 for an empty AnyValue
}
