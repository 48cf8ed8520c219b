package blueprint

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

// TestLoadErrors loads one estate per load error in testdata/load and
// compares every reported error with want.txt.
func TestLoadErrors(t *testing.T) {
	for _, name := range caseDirs(t, "load") {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("testdata", "load", name)
			est, err := Load(caseRoots(t, dir)...)
			if est != nil {
				t.Fatalf("load succeeded, want it to fail closed with no estate")
			}
			var les LoadErrors
			if !errors.As(err, &les) || len(les) == 0 {
				t.Fatalf("err = %v, want LoadErrors", err)
			}
			var b strings.Builder
			for _, e := range les {
				if e.File == "" {
					t.Errorf("error without a file: %v", e)
				}
				fmt.Fprintln(&b, e.Error())
			}
			golden(t, filepath.Join(dir, "want.txt"), []byte(relativise(b.String(), dir)))
		})
	}
}

func TestLoadRootGivenTwice(t *testing.T) {
	root := filepath.Join("testdata", "render", "seed-gateway", "root")
	_, err := Load(root, root)
	var les LoadErrors
	if !errors.As(err, &les) || len(les) != 1 || les[0].File != root || !strings.Contains(les[0].Message, "more than once") {
		t.Fatalf("err = %v, want one error naming the repeated root", err)
	}
}

func TestLoadNoRoots(t *testing.T) {
	if est, err := Load(); est != nil || err == nil {
		t.Fatalf("Load() = %v, %v; want an error", est, err)
	}
}

// TestLoadConfigAliasBomb: a few lines of anchors must not expand into an
// enormous config.
func TestLoadConfigAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: exp\nclass: exporter\ntype: otlp\nversion: 1\nowner: o\nconfig:\n  l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 9; i++ {
		fmt.Fprintf(&b, "  l%d: &l%d [*l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	fsys := fstest.MapFS{"teams/a/components/exp.yaml": {Data: []byte(b.String())}}
	_, err := LoadSources([]Source{{Dir: "bomb", FS: fsys}})
	if err == nil || !strings.Contains(err.Error(), "too large") {
		t.Fatalf("err = %v, want the config refused as too large", err)
	}
}

func TestLoadMissingRoot(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	_, err := Load(missing)
	var les LoadErrors
	if !errors.As(err, &les) || len(les) != 1 || les[0].File != missing || !strings.Contains(les[0].Message, "cannot read source root") {
		t.Fatalf("err = %v, want one error naming the missing root", err)
	}
}

// TestLoadUnreadableFiles checks that files that cannot be read are
// reported, and that Load (which reads with plain system calls) reports
// them exactly as a load through os.DirFS does.
func TestLoadUnreadableFiles(t *testing.T) {
	root := t.TempDir()
	write := func(rel string, data []byte) {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("teams/a/components/ok.yaml", []byte("name: ok\nclass: exporter\ntype: debug\nversion: 1\nowner: o\n"))
	write("teams/a/components/huge.yaml", append([]byte("name: huge\ndescription: "), bytes.Repeat([]byte("x"), maxFileSize)...))
	if err := os.Symlink("nowhere.yaml", filepath.Join(root, "teams", "a", "components", "dangling.yaml")); err != nil {
		t.Fatalf("cannot create a symlink: %v", err)
	}
	_, err := Load(root)
	var viaLoad LoadErrors
	if !errors.As(err, &viaLoad) {
		t.Fatalf("Load: err = %v, want LoadErrors", err)
	}
	want := []string{
		filepath.Join(root, "teams", "a", "components", "dangling.yaml") + ": a symbolic link that does not resolve",
		filepath.Join(root, "teams", "a", "components", "huge.yaml") + ": file is larger than 4 MiB",
	}
	if len(viaLoad) != len(want) || viaLoad[0].Error() != want[0] || viaLoad[1].Error() != want[1] {
		t.Fatalf("Load errors:\n%v\nwant:\n%s", viaLoad, strings.Join(want, "\n"))
	}
	// Through a plain fs.FS no link is followed.
	_, err = LoadSources([]Source{{Dir: root, FS: os.DirFS(root)}})
	var viaFS LoadErrors
	if !errors.As(err, &viaFS) || len(viaFS) != 2 || !strings.HasSuffix(viaFS[0].Error(), "dangling.yaml: a symbolic link (not followed here)") {
		t.Fatalf("through os.DirFS: %v", err)
	}
}
