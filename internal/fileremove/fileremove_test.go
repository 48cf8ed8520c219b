package fileremove

import (
	"os"
	"path/filepath"
	"testing"
)

// A tree goes whole; a link in it goes alone, never what it points at.
func TestTree(t *testing.T) {
	dir := t.TempDir()
	keep := filepath.Join(dir, "keep")
	tree := filepath.Join(dir, "tree")
	for _, d := range []string{keep, filepath.Join(tree, "a", "b")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(keep, "f"), filepath.Join(tree, "a", "b", "f"), filepath.Join(tree, "g")} {
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(keep, filepath.Join(tree, "a", "link")); err != nil {
		t.Fatal(err)
	}
	if err := Tree(tree); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(tree); !os.IsNotExist(err) {
		t.Fatalf("the tree is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(keep, "f")); err != nil {
		t.Fatalf("what the link pointed at: %v", err)
	}
	if err := Tree(filepath.Join(dir, "none")); err != nil {
		t.Fatalf("no tree: %v", err)
	}
}
