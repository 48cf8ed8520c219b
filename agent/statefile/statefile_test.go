package statefile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.json")
	type doc struct {
		A string `json:"a"`
		N int    `json:"n"`
	}
	var got doc
	if ok, err := Read(path, &got); ok || err != nil {
		t.Fatalf("missing file: %v %v", ok, err)
	}
	if err := Write(path, doc{"x", 3}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != "{\n  \"a\": \"x\",\n  \"n\": 3\n}\n" {
		t.Errorf("format changed: %q", data)
	}
	if ok, err := Read(path, &got); !ok || err != nil || got != (doc{"x", 3}) {
		t.Errorf("read back: %v %v %+v", ok, err, got)
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	corrupt := filepath.Join(dir, "c.json")
	if err := os.WriteFile(corrupt, []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if _, err := Read(corrupt, &v); err == nil || !strings.Contains(err.Error(), corrupt+" is corrupt") {
		t.Errorf("corrupt: %v", err)
	}
	if _, err := Read(dir, &v); err == nil || !strings.Contains(err.Error(), "read "+dir) {
		t.Errorf("directory: %v", err)
	}
	if err := Write(filepath.Join(dir, "e.json"), func() {}); err == nil || !strings.Contains(err.Error(), "encode ") {
		t.Errorf("unencodable: %v", err)
	}
}
