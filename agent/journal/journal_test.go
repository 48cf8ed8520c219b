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

// Records written before offer_hash existed still load; their statuses then
// name the offer by its content hash.
func TestRecordOfferHash(t *testing.T) {
	dir := t.TempDir()
	j, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	old := `{"id":"t0","kind":"collector","package":"otelcol","version":"0.148.0","hash":"c0ffee","step":"admitted"}`
	if err := os.WriteFile(j.Path(), []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := j.Load()
	if err != nil {
		t.Fatal(err)
	}
	if got.OfferHash != "" || got.StatusHash() != "c0ffee" {
		t.Fatalf("old record: offer hash %q, status hash %q; want \"\" and the content hash c0ffee", got.OfferHash, got.StatusHash())
	}

	r := &Record{ID: "t1", Kind: "collector", Package: "otelcol", Version: "0.149.0", Hash: "c0ffee", OfferHash: "0ffe12"}
	if err := j.Save(r, "admitted"); err != nil {
		t.Fatal(err)
	}
	got, err = j.Load()
	if err != nil {
		t.Fatal(err)
	}
	if got.Hash != "c0ffee" || got.OfferHash != "0ffe12" || got.StatusHash() != "0ffe12" {
		t.Fatalf("new record: hash %q, offer hash %q, status hash %q", got.Hash, got.OfferHash, got.StatusHash())
	}
}
