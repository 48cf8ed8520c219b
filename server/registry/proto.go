package registry

import (
	"hash/maphash"

	"github.com/open-telemetry/opamp-go/protobufs"
	"google.golang.org/protobuf/proto"

	"github.com/myriarch/myriarch/internal/attributes"
)

// marshalDeterministic encodes m the same way every time (map entries in
// key order), so that two encodings of equal messages compare equal.
func marshalDeterministic(m proto.Message) ([]byte, error) {
	return proto.MarshalOptions{Deterministic: true}.Marshal(m)
}

// described is what one AgentDescription contributes to an agent.
type described struct {
	identifying, nonIdentifying map[string]string
	warnings                    []eventDraft
}

// encoded is what is stored of it (see encodeDescription).
func (d described) encoded() []byte { return encodeDescription(d.identifying, d.nonIdentifying) }

var descSeed = maphash.MakeSeed()

// descSumOf is the digest agents keep of a stored description (0 for none).
func descSumOf(b []byte) uint64 {
	if len(b) == 0 {
		return 0
	}
	return maphash.Bytes(descSeed, b)
}

type eventDraft struct{ typ, msg string }

// describe applies the attribute rules to a reported description.
func describe(d *protobufs.AgentDescription) described {
	id := attributes.FromKeyValues(d.GetIdentifyingAttributes())
	non := attributes.FromKeyValues(d.GetNonIdentifyingAttributes())
	// The server stores service.version without a leading v, so "v0.149.0" and "0.149.0" are one version.
	if v, ok := id.Attrs["service.version"]; ok {
		id.Attrs["service.version"] = stripV(v)
	}
	out := described{identifying: id.Attrs, nonIdentifying: non.Attrs}
	dropped := append(append([]string(nil), id.LabelKeys...), non.LabelKeys...)
	if len(dropped) > 0 {
		out.warnings = append(out.warnings, eventDraft{EventLabelAttributeDropped,
			joinLimited("dropped agent-reported attributes in the server's labels. namespace: ", dropped)})
	}
	if id.Dropped > 0 {
		out.warnings = append(out.warnings, eventDraft{EventAttributeLimit,
			itoa(id.Dropped) + " identifying attributes dropped beyond the limit of " + itoa(attributes.MaxPerList)})
	}
	if non.Dropped > 0 {
		out.warnings = append(out.warnings, eventDraft{EventAttributeLimit,
			itoa(non.Dropped) + " non-identifying attributes dropped beyond the limit of " + itoa(attributes.MaxPerList)})
	}
	if n, size := fitDescription(out.identifying, out.nonIdentifying); n > 0 {
		out.warnings = append(out.warnings, eventDraft{EventAttributeLimit,
			itoa(n) + " attributes (" + itoa(size) + " bytes) dropped, the largest first: the description exceeds the limit of " +
				itoa(MaxDescriptionBytes) + " bytes"})
	}
	return out
}

func stripV(v string) string {
	if len(v) > 1 && (v[0] == 'v' || v[0] == 'V') && v[1] >= '0' && v[1] <= '9' {
		return v[1:]
	}
	return v
}
