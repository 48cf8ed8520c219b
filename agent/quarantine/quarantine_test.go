package quarantine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A file written before the package existed (by either engine) must load.
func TestLoadExistingFile(t *testing.T) {
	path := filepath.Join("testdata", "quarantine.json")
	q, err := New(path, time.Minute, nil).Load()
	if err != nil {
		t.Fatal(err)
	}
	a := q[strings.Repeat("ab", 32)]
	if a.Version != "1.2.0" || a.Reason != "health gate: crash loop" || a.Transient || a.Count != 1 || !a.RetryAfter.IsZero() {
		t.Errorf("artifact entry: %+v", a)
	}
	b := q[strings.Repeat("cd", 32)]
	want := time.Date(2026, 11, 30, 10, 2, 0, 0, time.UTC)
	if !b.Transient || b.Count != 2 || !b.RetryAfter.Equal(want) {
		t.Errorf("transient entry: %+v", b)
	}
}

func TestMissingAndCorrupt(t *testing.T) {
	dir := t.TempDir()
	s := New(filepath.Join(dir, "q.json"), time.Minute, nil)
	if q, err := s.Load(); err != nil || len(q) != 0 {
		t.Errorf("missing file: %v %v", q, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "q.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(); err == nil || !strings.Contains(err.Error(), "q.json is corrupt") {
		t.Errorf("corrupt file: %v", err)
	}
	// A corrupt file never blocks an install and is replaced by Record.
	if err := s.Check("aa"); err != nil {
		t.Errorf("check on corrupt file: %v", err)
	}
	if err := s.Record("aa", "1.0.0", "bad", false); err != nil {
		t.Fatal(err)
	}
	if err := s.Check("aa"); !errors.Is(err, ErrPreviouslyFailed) {
		t.Errorf("after record: %v", err)
	}
}

func TestArtifactBlocksForGood(t *testing.T) {
	s := New(filepath.Join(t.TempDir(), "q.json"), time.Minute, nil)
	if err := s.Record("aa", "1.3.0", "health gate", false); err != nil {
		t.Fatal(err)
	}
	err := s.Check("aa")
	if !errors.Is(err, ErrPreviouslyFailed) || !strings.Contains(err.Error(), "previously failed: version 1.3.0 with this hash failed at") ||
		!strings.Contains(err.Error(), "(health gate); offer a different hash") {
		t.Errorf("got %v", err)
	}
	if err := s.Check("bb"); err != nil {
		t.Errorf("other hash: %v", err)
	}
}

func TestTransientBackoffDoublesToAnHour(t *testing.T) {
	s := New(filepath.Join(t.TempDir(), "q.json"), 10*time.Minute, nil)
	for i, want := range []time.Duration{10 * time.Minute, 20 * time.Minute, 40 * time.Minute, time.Hour, time.Hour} {
		if err := s.Record("aa", "1.4.0", "registry down", true); err != nil {
			t.Fatal(err)
		}
		q, err := s.Load()
		if err != nil {
			t.Fatal(err)
		}
		ent := q["aa"]
		if ent.Count != i+1 || ent.RetryAfter.Sub(ent.Failed) != want {
			t.Errorf("failure %d: count %d, wait %v, want %v", i+1, ent.Count, ent.RetryAfter.Sub(ent.Failed), want)
		}
	}
	if err := s.Check("aa"); err == nil || !strings.Contains(err.Error(), "next attempt allowed after") {
		t.Errorf("within backoff: %v", err)
	}
	// An artifact fault after transient ones blocks for good.
	if err := s.Record("aa", "1.4.0", "bad signature", false); err != nil {
		t.Fatal(err)
	}
	q, _ := s.Load()
	if ent := q["aa"]; ent.Transient || !ent.RetryAfter.IsZero() {
		t.Errorf("after artifact fault: %+v", ent)
	}
}

func TestTransientExpires(t *testing.T) {
	s := New(filepath.Join(t.TempDir(), "q.json"), 0, nil)
	if err := s.Record("aa", "1.4.0", "registry down", true); err != nil {
		t.Fatal(err)
	}
	if err := s.Check("aa"); err != nil {
		t.Errorf("backoff of 0 has passed: %v", err)
	}
}

func TestBounded(t *testing.T) {
	s := New(filepath.Join(t.TempDir(), "q.json"), time.Minute, nil)
	for i := range MaxEntries + 5 {
		if err := s.Record(fmt.Sprintf("h%03d", i), "1.0.0", "bad", false); err != nil {
			t.Fatal(err)
		}
	}
	q, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(q) != MaxEntries {
		t.Errorf("%d entries, want %d", len(q), MaxEntries)
	}
	if _, ok := q[fmt.Sprintf("h%03d", MaxEntries+4)]; !ok {
		t.Error("newest entry dropped")
	}
}
