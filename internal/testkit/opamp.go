package testkit

import "github.com/open-telemetry/opamp-go/protobufs"

// KV is an OpAMP key-value holding the string v.
func KV(k, v string) *protobufs.KeyValue {
	return &protobufs.KeyValue{Key: k, Value: &protobufs.AnyValue{Value: &protobufs.AnyValue_StringValue{StringValue: v}}}
}
