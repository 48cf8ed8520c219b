package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

var (
	heldMu sync.Mutex
	held   = map[string]int{} // tests of this process holding the engine shared; guarded by heldMu
)

// nestedLocked reports whether an enclosing test of name holds the engine.
func nestedLocked(name string) bool {
	for n := range held {
		if strings.HasPrefix(name, n+"/") {
			return true
		}
	}
	return false
}

// holdEngine takes the engine lock, which every test process on this
// machine shares, for the rest of the test: shared, or exclusive for a test
// that watches every container on the engine. It blocks until granted.
//
// A turnstile gives the exclusive taker its turn: it holds the turnstile
// while it waits, so no new shared taker gets in before it, and it does
// not wait for a package of tests that keep the engine shared one after
// another without a gap.
func holdEngine(t testing.TB, exclusive bool) {
	t.Helper()
	turnstile := openLock(t, "myriarch-docker-turnstile.lock")
	engine := openLock(t, "myriarch-docker-engine.lock")
	t.Cleanup(func() { engine.Close() }) // closing the file releases the lock
	if exclusive {
		lock(t, turnstile, syscall.LOCK_EX)
		lock(t, engine, syscall.LOCK_EX)
		turnstile.Close()
		return
	}
	heldMu.Lock()
	nested := nestedLocked(t.Name())
	held[t.Name()]++
	heldMu.Unlock()
	t.Cleanup(func() {
		heldMu.Lock()
		if held[t.Name()]--; held[t.Name()] == 0 {
			delete(held, t.Name())
		}
		heldMu.Unlock()
	})
	// A subtest of a test that holds the engine takes it without the
	// turnstile: an exclusive taker waiting there waits for the enclosing
	// test, which waits for its subtest.
	if !nested {
		lock(t, turnstile, syscall.LOCK_SH)
	}
	lock(t, engine, syscall.LOCK_SH)
	turnstile.Close()
}

func openLock(t testing.TB, name string) *os.File {
	t.Helper()
	path := filepath.Join(os.TempDir(), name)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatalf("docker engine lock: %v", err)
	}
	return f
}

func lock(t testing.TB, f *os.File, how int) {
	t.Helper()
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if err == nil {
			return
		}
		if err != syscall.EINTR {
			f.Close()
			t.Fatal(fmt.Errorf("docker engine lock %s: %w", f.Name(), err))
		}
	}
}
