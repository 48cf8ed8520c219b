package registry

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/open-telemetry/opamp-go/protobufs"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// TestDescDecoderMatchesProto: whatever the stored bytes, the decoder
// gives what proto.Unmarshal gives (the same message, the same error or
// not, the same attributes after the rules), on reported descriptions, on
// the odd cases the fast path hands over and on corrupted bytes.
func TestDescDecoderMatchesProto(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	dd := newDescDecoder()
	str := func(s string) *protobufs.AnyValue {
		return &protobufs.AnyValue{Value: &protobufs.AnyValue_StringValue{StringValue: s}}
	}
	values := []func() *protobufs.AnyValue{
		func() *protobufs.AnyValue { return str("linux") },
		func() *protobufs.AnyValue { return str("") },
		func() *protobufs.AnyValue { return str(string(rune('a' + rng.IntN(26)))) },
		func() *protobufs.AnyValue { return nil },
		func() *protobufs.AnyValue { return &protobufs.AnyValue{} },
		func() *protobufs.AnyValue {
			return &protobufs.AnyValue{Value: &protobufs.AnyValue_IntValue{IntValue: 42}}
		},
		func() *protobufs.AnyValue {
			return &protobufs.AnyValue{Value: &protobufs.AnyValue_BoolValue{BoolValue: true}}
		},
		func() *protobufs.AnyValue {
			return &protobufs.AnyValue{Value: &protobufs.AnyValue_ArrayValue{ArrayValue: &protobufs.ArrayValue{Values: []*protobufs.AnyValue{str("x")}}}}
		},
	}
	keys := []string{"host.name", "os.type", "service.version", "labels.x", "", "k\x00ey"}
	var cases [][]byte
	for range 3000 {
		d := &protobufs.AgentDescription{}
		kinds := len(values)
		if rng.IntN(2) == 0 {
			kinds = 5 // what agents report: strings (the fast path), no value, an empty one
		}
		for range rng.IntN(12) {
			kv := &protobufs.KeyValue{Key: keys[rng.IntN(len(keys))], Value: values[rng.IntN(kinds)]()}
			if rng.IntN(2) == 0 {
				d.IdentifyingAttributes = append(d.IdentifyingAttributes, kv)
			} else {
				d.NonIdentifyingAttributes = append(d.NonIdentifyingAttributes, kv)
			}
		}
		b, err := proto.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		switch rng.IntN(6) {
		case 0: // an unknown field
			b = protowire.AppendVarint(protowire.AppendTag(b, 9, protowire.VarintType), 7)
		case 1: // a KeyValue whose value comes twice (proto merges them)
			kv := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "k")
			for _, s := range []string{"a", "b"} {
				v := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), s)
				kv = protowire.AppendBytes(protowire.AppendTag(kv, 2, protowire.BytesType), v)
			}
			b = protowire.AppendBytes(protowire.AppendTag(b, 2, protowire.BytesType), kv)
		case 2: // invalid UTF-8 in a value
			v := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "\xff\xfe")
			kv := protowire.AppendBytes(protowire.AppendTag(protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "k"), 2, protowire.BytesType), v)
			b = protowire.AppendBytes(protowire.AppendTag(b, 1, protowire.BytesType), kv)
		case 3: // corrupted
			if len(b) > 0 {
				c := append([]byte(nil), b...)
				c[rng.IntN(len(c))] ^= byte(1 + rng.IntN(255))
				b = c
			}
		case 4: // cut short
			b = b[:rng.IntN(len(b)+1)]
		}
		cases = append(cases, b)
	}
	fast := 0
	for i, b := range cases {
		var want protobufs.AgentDescription
		wantErr := proto.Unmarshal(b, &want)
		if _, ok := dd.fast(b); ok {
			fast++
		}
		got, err := dd.decode(b)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("case %d %x: error %v, proto.Unmarshal %v", i, b, err, wantErr)
		}
		if err != nil {
			continue
		}
		if !proto.Equal(got, &want) {
			t.Fatalf("case %d %x:\n got %v\nwant %v", i, b, got, &want)
		}
		if g, w := describe(got), describe(&want); !reflect.DeepEqual(g, w) {
			t.Fatalf("case %d: attributes %+v, want %+v", i, g, w)
		}
	}
	if fast < len(cases)/10 {
		t.Fatalf("only %d of %d cases took the fast path", fast, len(cases))
	}
}
