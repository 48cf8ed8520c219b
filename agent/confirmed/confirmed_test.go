package confirmed

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The record is a file: a Store built later (the updater restarted) reads
// what an earlier one wrote, and one whose write was cut short keeps
// loading the record before it.
func TestRecordSurvivesRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), File)
	first := New(path, nil)
	for _, v := range []string{"1.0.0", "1.1.0", "v1.2.0"} {
		if err := first.Record("collector", v, "hash-"+v); err != nil {
			t.Fatal(err)
		}
	}
	if err := first.Record("myriarch-updater", "0.3.0", ""); err != nil {
		t.Fatal(err)
	}
	// A write cut short leaves its temporary file, never a torn record.
	if err := os.WriteFile(filepath.Join(filepath.Dir(path), "."+File+".4242.tmp"), []byte(`{"collector": [{"vers`), 0o600); err != nil {
		t.Fatal(err)
	}

	again := New(path, nil)
	if got, want := again.Versions("collector"), []string{"1.0.0", "1.1.0", "v1.2.0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("after a restart: %v, want %v", got, want)
	}
	if !again.Has("collector", "1.2.0") || !again.Has("collector", "v1.0.0") || again.Has("collector", "0.9.0") || again.Has("other", "1.0.0") {
		t.Error("Has")
	}
	if got := again.Versions("myriarch-updater"); !reflect.DeepEqual(got, []string{"0.3.0"}) {
		t.Errorf("another package: %v", got)
	}
	r, err := again.Load()
	if err != nil || r["collector"][0].Hash != "hash-1.0.0" || r["collector"][0].Confirmed.IsZero() {
		t.Errorf("entries %+v, %v", r, err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("record file: %v, %v", st, err)
	}
}

// A version confirmed again moves to the end; the record keeps the last
// MaxPerPackage versions of each package.
func TestRecordIsBounded(t *testing.T) {
	s := New(filepath.Join(t.TempDir(), File), nil)
	for i := range MaxPerPackage + 8 {
		if err := s.Record("collector", fmt.Sprintf("1.%d.0", i), ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Record("collector", "v1.20.0", ""); err != nil {
		t.Fatal(err)
	}
	got := s.Versions("collector")
	if len(got) != MaxPerPackage || got[0] != "1.8.0" || got[len(got)-1] != "v1.20.0" || strings.Count(strings.Join(got, " "), "1.20.0") != 1 {
		t.Errorf("record %v: want the last %d, 1.8.0 first and 1.20.0 once, last", got, MaxPerPackage)
	}
	if s.Has("collector", "1.7.0") {
		t.Error("a version past the bound is still recorded")
	}
}

// An unreadable record allows nothing and is replaced by the next Record.
func TestUnreadableRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), File)
	if err := os.WriteFile(path, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := New(path, nil)
	if _, err := s.Load(); err == nil || !strings.Contains(err.Error(), "is corrupt") {
		t.Errorf("Load: %v", err)
	}
	if v := s.Versions("collector"); v != nil {
		t.Errorf("an unreadable record confirms %v", v)
	}
	if err := s.Record("collector", "1.0.0", ""); err != nil {
		t.Fatal(err)
	}
	if !s.Has("collector", "1.0.0") {
		t.Error("not recorded over an unreadable file")
	}
}
