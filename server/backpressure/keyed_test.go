package backpressure

import (
	"fmt"
	"testing"
	"time"
)

func TestKeyed(t *testing.T) {
	now := time.Unix(1000, 0)
	k := NewKeyed(KeyedOptions{Rate: 1, Burst: 3, MaxKeys: 2, Now: func() time.Time { return now }})
	take := func(key string, n int) (allowed int) {
		for range n {
			if k.Allow(key) {
				allowed++
			}
		}
		return allowed
	}
	if got := take("a", 10); got != 3 {
		t.Fatalf("a: %d allowed at once, want the burst of 3", got)
	}
	if got := take("b", 10); got != 3 {
		t.Fatalf("b: %d allowed, want its own burst of 3 (a's spending must not count)", got)
	}
	now = now.Add(2 * time.Second)
	if got := take("a", 10); got != 2 {
		t.Fatalf("a after 2 s: %d allowed, want 2 (1 per second)", got)
	}
	// Full with two busy keys: new keys share the overflow bucket.
	if got := take("c", 2) + take("d", 2); got != 3 {
		t.Fatalf("c and d in overflow: %d allowed, want 3 together", got)
	}
	// Once a and b have been quiet long enough, their buckets are forgotten.
	now = now.Add(time.Minute)
	if got := take("e", 10); got != 3 {
		t.Fatalf("e after the others went quiet: %d allowed, want its own 3", got)
	}
	if n := len(k.buckets); n > 2 {
		t.Fatalf("%d buckets held, bound 2", n)
	}
}

// Available looks without spending: a budget spent only by failures.
func TestKeyedAvailable(t *testing.T) {
	now := time.Unix(1000, 0)
	k := NewKeyed(KeyedOptions{Rate: 0.5, Burst: 2, MaxKeys: 4, Now: func() time.Time { return now }})
	for range 5 {
		if !k.Available("a") {
			t.Fatal("a new key has its burst")
		}
	}
	if len(k.buckets) != 0 {
		t.Fatalf("looking kept %d buckets, want none", len(k.buckets))
	}
	k.Allow("a")
	k.Allow("a")
	if k.Available("a") {
		t.Fatal("a spent its burst of 2 but still has a token")
	}
	if !k.Available("b") {
		t.Fatal("b pays for a's spending")
	}
	now = now.Add(2 * time.Second)
	if !k.Available("a") || !k.Available("a") {
		t.Fatal("a after 2 s at 0.5/s: one token back, and looking must not spend it")
	}
}

// Forget gives a key that spent its budget the whole burst back, and only
// that key.
func TestKeyedForget(t *testing.T) {
	now := time.Unix(1000, 0)
	k := NewKeyed(KeyedOptions{Rate: 1e-6, Burst: 3, Now: func() time.Time { return now }})
	for _, key := range []string{"a", "b"} {
		for range 3 {
			k.Allow(key)
		}
	}
	k.Forget("a")
	k.Forget("never seen")
	for i := range 3 {
		if !k.Allow("a") {
			t.Fatalf("a after Forget: token %d of the burst of 3 refused", i+1)
		}
	}
	if k.Allow("a") || k.Available("b") {
		t.Fatal("beyond the burst after Forget, or b given back what only a was")
	}
	if len(k.buckets) != 2 {
		t.Fatalf("%d buckets held, want a's and b's", len(k.buckets))
	}
}

func TestSourceKey(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"192.0.2.7:4711", "192.0.2.7"},
		{"[2001:db8:1:2:3:4:5:6]:80", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff::1]:80", "2001:db8:1:2::/64"},
		{"[::ffff:192.0.2.7]:1", "192.0.2.7"},
		{"[fe80::1%eth0]:1", "fe80::/64"},
		{"not an address", "not an address"},
	} {
		if got := SourceKey(tt.in); got != tt.want {
			t.Errorf("SourceKey(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func BenchmarkKeyedAllow(b *testing.B) {
	k := NewKeyed(KeyedOptions{})
	for i := range b.N {
		k.Allow(fmt.Sprint(i % 1000))
	}
}
