//go:build unix

package blueprint

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Links are followed only to regular files inside the root; a FIFO or a
// link out of the root is refused without being read (and without saying
// what is there).
func TestLoadConfinedToTheRoot(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	comp := []byte("name: %s\nclass: exporter\ntype: debug\nversion: 1\nowner: o\n")
	dir := filepath.Join(root, "teams", "a", "components")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(root, "teams", "shared.yaml.txt"), []byte(strings.Replace(string(comp), "%s", "linked", 1)), 0o644)
	os.WriteFile(filepath.Join(outside, "secret.yaml"), []byte(strings.Replace(string(comp), "%s", "secret", 1)), 0o644)
	os.WriteFile(filepath.Join(dir, "ok.yaml"), []byte(strings.Replace(string(comp), "%s", "ok", 1)), 0o644)
	if err := os.Symlink("../../shared.yaml.txt", filepath.Join(dir, "linked.yaml")); err != nil {
		t.Fatal(err)
	}
	est, err := Load(root)
	if err != nil || est.Components["a/linked"] == nil {
		t.Fatalf("a link inside the root: %v", err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.yaml"), filepath.Join(dir, "secret.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := Load(root); done <- err }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the load hangs on a FIFO")
	}
	msg := fmt.Sprint(err)
	for _, want := range []string{"fifo.yaml: not a regular file", "secret.yaml: a symbolic link that resolves outside the source root"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%v\nlacks %q", err, want)
		}
	}
	if strings.Contains(msg, outside) || strings.Contains(msg, "secret\n") {
		t.Errorf("the error says what is outside: %v", err)
	}
}
