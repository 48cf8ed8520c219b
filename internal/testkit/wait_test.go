package testkit

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestPoll(t *testing.T) {
	var n atomic.Int32
	if !Poll(5*time.Second, func() bool { return n.Add(1) >= 3 }) {
		t.Fatal("a condition that comes true was reported as timed out")
	}
	if got := n.Load(); got != 3 {
		t.Fatalf("condition evaluated %d times, want 3", got)
	}
	if Poll(30*time.Millisecond, func() bool { return false }) {
		t.Fatal("a condition that never holds was reported as holding")
	}
}

func TestKV(t *testing.T) {
	kv := KV("service.name", "otelcol")
	if kv.Key != "service.name" || kv.Value.GetStringValue() != "otelcol" {
		t.Fatalf("KV = %v", kv)
	}
}
