package peerbuild

import (
	"context"
	"testing"
)

// BenchmarkEnsureWarm measures Ensure when the peers are already built: the
// cost every e2e test process pays (lock, record, re-hash of the archives and
// executables). The first call builds them if needed, outside the timer.
func BenchmarkEnsureWarm(b *testing.B) {
	ctx := context.Background()
	if _, err := Ensure(ctx, nil); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Ensure(ctx, nil); err != nil {
			b.Fatal(err)
		}
	}
}
