package peerbuild

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readArchive returns the entries of a tar.gz.
func readArchive(t *testing.T, path string) map[string]*tar.Header {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	out := map[string]*tar.Header{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		h.PAXRecords = map[string]string{"body": string(body)}
		out[h.Name] = h
	}
}

func TestWriteArchive(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "exe")
	content := bytes.Repeat([]byte("collector"), 1000)
	if err := os.WriteFile(bin, content, 0o755); err != nil {
		t.Fatal(err)
	}
	a1 := filepath.Join(dir, "a1.tar.gz")
	a2 := filepath.Join(dir, "a2.tar.gz")
	for _, a := range []string{a1, a2} {
		if err := writeArchive(a, bin, CollectorExecutable); err != nil {
			t.Fatal(err)
		}
	}
	entries := readArchive(t, a1)
	if len(entries) != 1 {
		t.Fatalf("archive has %d entries, want 1", len(entries))
	}
	h, ok := entries[CollectorExecutable]
	if !ok {
		t.Fatalf("archive lacks %s: %v", CollectorExecutable, entries)
	}
	if h.Mode != 0o755 || h.Typeflag != tar.TypeReg {
		t.Errorf("entry mode %o type %c, want 755 regular", h.Mode, h.Typeflag)
	}
	if h.PAXRecords["body"] != string(content) {
		t.Error("archived executable differs from the source")
	}
	s1, n1, err := fileSHA256(a1)
	if err != nil {
		t.Fatal(err)
	}
	s2, _, _ := fileSHA256(a2)
	if s1 != s2 {
		t.Errorf("same executable gave different archives: %s vs %s", s1, s2)
	}
	if st, _ := os.Stat(a1); st.Size() != n1 {
		t.Errorf("fileSHA256 size %d, file size %d", n1, st.Size())
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".archive-*"))
	if len(left) != 0 {
		t.Errorf("staging files left behind: %v", left)
	}
}

func TestWriteArchiveErrors(t *testing.T) {
	dir := t.TempDir()
	err := writeArchive(filepath.Join(dir, "a.tar.gz"), filepath.Join(dir, "missing"), CollectorExecutable)
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing executable: err = %v, want one naming it", err)
	}
	bin := filepath.Join(dir, "exe")
	os.WriteFile(bin, []byte("x"), 0o755)
	err = writeArchive(filepath.Join(dir, "no-such-dir", "a.tar.gz"), bin, CollectorExecutable)
	if err == nil || !strings.Contains(err.Error(), "no-such-dir") {
		t.Errorf("missing destination directory: err = %v, want one naming it", err)
	}
	if _, _, err := fileSHA256(filepath.Join(dir, "nope")); err == nil {
		t.Error("fileSHA256 of a missing file: no error")
	}
}
