package journal

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/windows"
)

// hold opens path with no sharing for d, as another process replacing or
// reading the file would for a moment.
func hold(t *testing.T, path string, d time.Duration) <-chan struct{} {
	t.Helper()
	p, _ := windows.UTF16PtrFromString(path)
	h, err := windows.CreateFile(p, windows.GENERIC_READ|windows.GENERIC_WRITE, 0, nil, windows.OPEN_EXISTING, windows.FILE_ATTRIBUTE_NORMAL, 0)
	if err != nil {
		t.Fatal(err)
	}
	released := make(chan struct{})
	go func() {
		time.Sleep(d)
		windows.CloseHandle(h)
		close(released)
	}()
	return released
}

// A state file another process holds for a moment is read, and replaced,
// once it lets go; one held longer than transientFor is an error.
func TestStateFileHeldForAMoment(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	if err := WriteFile(path, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	released := hold(t, path, 300*time.Millisecond)
	if b, err := ReadFile(path); err != nil || string(b) != "one" {
		t.Fatalf("read while held: %q %v", b, err)
	}
	<-released
	released = hold(t, path, 300*time.Millisecond)
	if err := WriteFile(path, []byte("two"), 0o600); err != nil {
		t.Fatalf("replace while held: %v", err)
	}
	<-released
	if b, err := os.ReadFile(path); err != nil || string(b) != "two" {
		t.Fatalf("after the replace: %q %v", b, err)
	}
	released = hold(t, path, transientFor+time.Second)
	if _, err := ReadFile(path); err == nil {
		t.Fatal("a file held past the wait was read")
	}
	<-released
}
