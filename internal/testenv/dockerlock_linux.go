package testenv

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// holdEngine takes the engine lock (a file lock every test process on this
// machine shares) for the rest of the test: shared, or exclusive for a test
// that watches every container on the engine. It blocks until granted.
func holdEngine(t testing.TB, exclusive bool) {
	t.Helper()
	path := filepath.Join(os.TempDir(), "myriarch-docker-engine.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatalf("docker engine lock %s: %v", path, err)
	}
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	for {
		err = syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		t.Fatalf("docker engine lock %s: %v", path, err)
	}
	t.Cleanup(func() { f.Close() }) // closing the file releases the lock
}
