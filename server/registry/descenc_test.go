package registry

import (
	"bytes"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/open-telemetry/opamp-go/protobufs"
	"google.golang.org/protobuf/proto"

	"github.com/myriarch/myriarch/internal/attributes"
)

// protoDescription is the stored description as proto.Marshal gives it:
// what appendDescription must produce byte for byte (rows are compared by
// the digest of these bytes).
func protoDescription(id, non map[string]string) []byte {
	kvs := func(m map[string]string) []*protobufs.KeyValue {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make([]*protobufs.KeyValue, len(keys))
		for i, k := range keys {
			out[i] = &protobufs.KeyValue{Key: k, Value: &protobufs.AnyValue{Value: &protobufs.AnyValue_StringValue{StringValue: m[k]}}}
		}
		return out
	}
	b, _ := proto.Marshal(&protobufs.AgentDescription{IdentifyingAttributes: kvs(id), NonIdentifyingAttributes: kvs(non)})
	return b
}

func TestEncodeDescriptionAsProto(t *testing.T) {
	long := strings.Repeat("x", 300)
	for name, tc := range map[string]struct{ id, non map[string]string }{
		"none":        {},
		"one list":    {id: map[string]string{"service.name": "otelcol"}},
		"both":        {id: map[string]string{"service.name": "otelcol", "service.instance.id": "u"}, non: map[string]string{"host.name": "h", "os.type": "linux"}},
		"empty key":   {id: map[string]string{"": "v"}, non: map[string]string{"": ""}},
		"empty value": {id: map[string]string{"k": ""}},
		"long":        {id: map[string]string{long: long}, non: map[string]string{"k": strings.Repeat("y", 20000)}},
	} {
		t.Run(name, func(t *testing.T) {
			got, want := encodeDescription(tc.id, tc.non), protoDescription(tc.id, tc.non)
			if !bytes.Equal(got, want) {
				t.Fatalf("encoded\n%x\nproto.Marshal gives\n%x", got, want)
			}
		})
	}
}

// An agent's row holds its two lists as reported, whatever its view adds
// (labels) or hides (a non-identifying value under an identifying key).
func TestAgentRowDescriptionAsProto(t *testing.T) {
	id := map[string]string{"service.name": "otelcol", "host.name": "ident"}
	non := map[string]string{"host.name": "nonident", "os.type": "linux", "site": ""}
	a := &agent{desc: attributes.Describe(id, non, map[string]string{"wave": "1"}, nil), hasDesc: true}
	if got, want := a.encodedDesc(), protoDescription(id, non); !bytes.Equal(got, want) {
		t.Fatalf("row holds\n%x\nproto.Marshal of the lists gives\n%x", got, want)
	}
	if (&agent{}).encodedDesc() != nil {
		t.Fatal("an agent without a description has one in its row")
	}
}

func FuzzEncodeDescription(f *testing.F) {
	f.Add("service.name", "otelcol", "host.name", "h", "")
	f.Add("", "", "k", strings.Repeat("v", 200), "x")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2, v3 string) {
		for _, s := range []string{k1, v1, k2, v2, v3} {
			if !utf8.ValidString(s) {
				t.Skip("kept attributes are cleaned: valid UTF-8")
			}
		}
		id, non := map[string]string{k1: v1}, map[string]string{k2: v2, k1 + k2: v3}
		if got, want := encodeDescription(id, non), protoDescription(id, non); !bytes.Equal(got, want) {
			t.Fatalf("encoded\n%x\nproto.Marshal gives\n%x", got, want)
		}
	})
}
