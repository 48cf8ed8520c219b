package journal

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestJournalRoundTrip(t *testing.T) {
	dir := t.TempDir()
	j, err := Open(filepath.Join(dir, "state"))
	if err != nil {
		t.Fatal(err)
	}
	if r, err := j.Load(); err != nil || r != nil {
		t.Fatalf("empty journal: %v %v", r, err)
	}
	r := &Record{ID: "t1", Kind: "collector", Package: "otelcol", Version: "0.149.0", Hash: "ab"}
	if err := j.Save(r, "downloaded"); err != nil {
		t.Fatal(err)
	}
	if err := j.Save(r, "verified"); err != nil {
		t.Fatal(err)
	}
	got, err := j.Load()
	if err != nil || got.Step != "verified" || got.Version != "0.149.0" || strings.Join(got.StepTrail, ",") != "downloaded,verified" {
		t.Fatalf("got %+v %v", got, err)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "state"))
	if len(entries) != 1 {
		t.Fatalf("temp files left behind: %v", entries)
	}
	if err := j.Clear(); err != nil {
		t.Fatal(err)
	}
	if r, _ := j.Load(); r != nil {
		t.Fatal("cleared journal still loads")
	}
	if err := j.Clear(); err != nil {
		t.Fatalf("clearing twice: %v", err)
	}
}

func TestJournalCorrupt(t *testing.T) {
	j, _ := Open(t.TempDir())
	os.WriteFile(j.Path(), []byte("{torn"), 0o600)
	if _, err := j.Load(); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("want corrupt error, got %v", err)
	}
}

func TestWriteFileMode(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := WriteFile(p, []byte("a"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("b"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	st, _ := os.Stat(p)
	if string(b) != "b" || st.Mode().Perm() != 0o600 {
		t.Fatalf("content %q mode %v", b, st.Mode())
	}
}
