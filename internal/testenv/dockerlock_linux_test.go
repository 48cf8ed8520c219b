package testenv

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A shared holder's subtest takes the engine again while an exclusive
// taker waits at the turnstile: no deadlock, and the exclusive taker gets
// the engine once the holders are done.
func TestEngineLockNestedSharedAndExclusive(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	got := make(chan struct{})
	t.Run("holder", func(t *testing.T) {
		holdEngine(t, false)
		// Another process's exclusive taker, at the turnstile and then the engine.
		turn, _ := os.OpenFile(filepath.Join(os.TempDir(), "myriarch-docker-turnstile.lock"), os.O_CREATE|os.O_RDWR, 0o666)
		defer turn.Close()
		if err := syscall.Flock(int(turn.Fd()), syscall.LOCK_EX); err != nil {
			t.Fatal(err)
		}
		go func() {
			eng, _ := os.OpenFile(filepath.Join(os.TempDir(), "myriarch-docker-engine.lock"), os.O_CREATE|os.O_RDWR, 0o666)
			defer eng.Close()
			syscall.Flock(int(eng.Fd()), syscall.LOCK_EX)
			close(got)
		}()
		t.Run("nested", func(t *testing.T) { holdEngine(t, false) })
		select {
		case <-got:
			t.Fatal("the exclusive taker got the engine while it was held")
		case <-time.After(50 * time.Millisecond):
		}
	})
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the exclusive taker never got the engine")
	}
}
