package blueprint

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// golden compares got with the golden file, or rewrites it under -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run go test -update to create it): %v", err)
	}
	if string(want) != string(got) {
		t.Errorf("output differs from %s (run go test -update after checking the change):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// caseRoots returns the source roots of a testdata case: root, then root2…
func caseRoots(t *testing.T, dir string) []string {
	t.Helper()
	var roots []string
	for _, name := range []string{"root", "root2", "root3"} {
		if st, err := os.Stat(filepath.Join(dir, name)); err == nil && st.IsDir() {
			roots = append(roots, filepath.Join(dir, name))
		}
	}
	if len(roots) == 0 {
		t.Fatalf("%s has no root directory", dir)
	}
	return roots
}

// caseDirs lists the case directories under testdata/<group>.
func caseDirs(t *testing.T, group string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join("testdata", group))
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, e.Name())
		}
	}
	if len(dirs) == 0 {
		t.Fatalf("no cases under testdata/%s", group)
	}
	return dirs
}

// relativise makes paths in output independent of where the case lives.
func relativise(s, dir string) string {
	return strings.ReplaceAll(s, dir+string(filepath.Separator), "")
}
