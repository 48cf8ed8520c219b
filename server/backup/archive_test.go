package backup

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/myriarch/myriarch/server/store"
)

// archiveOf writes a gzip'd tar of the entries given, in order.
func archiveOf(t *testing.T, entries ...[2]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		if err := tw.WriteHeader(&tar.Header{Name: e[0], Mode: 0o600, Size: int64(len(e[1])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(e[1]))
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

func manifest(t *testing.T, m Manifest) string {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Write and Read round-trip; every way an archive can lie is refused,
// naming what.
func TestArchive(t *testing.T) {
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "a.copy"), []byte("rows"), 0o600); err != nil {
		t.Fatal(err)
	}
	info := store.SnapshotInfo{Backend: "postgres", SchemaVersion: 8, Files: []string{"a.copy"}}
	var good bytes.Buffer
	if err := Write(&good, src, Manifest{Created: time.Now().UTC(), EstateRevision: "abc", SnapshotInfo: info}); err != nil {
		t.Fatal(err)
	}
	m, err := Read(bytes.NewReader(good.Bytes()), t.TempDir())
	if err != nil || m.SchemaVersion != 8 || m.EstateRevision != "abc" || m.SHA256["a.copy"] == "" {
		t.Fatalf("read back %+v, %v", m, err)
	}
	ok := Manifest{Format: Format, SnapshotInfo: info, SHA256: m.SHA256}
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"manifest not first", archiveOf(t, [2]string{"a.copy", "rows"}, [2]string{ManifestName, manifest(t, ok)}), "the first entry is"},
		{"another format", archiveOf(t, [2]string{ManifestName, manifest(t, Manifest{Format: 9, SnapshotInfo: info})}), "archive format 9"},
		{"a path in the manifest", archiveOf(t, [2]string{ManifestName, manifest(t, Manifest{Format: Format,
			SnapshotInfo: store.SnapshotInfo{Files: []string{"../x"}}})}), `names the file "../x"`},
		{"an entry not in the manifest", archiveOf(t, [2]string{ManifestName, manifest(t, ok)}, [2]string{"a.copy", "rows"}, [2]string{"b.copy", "x"}), `unexpected entry "b.copy"`},
		{"a missing file", archiveOf(t, [2]string{ManifestName, manifest(t, ok)}), `"a.copy" is missing`},
		{"a changed file", archiveOf(t, [2]string{ManifestName, manifest(t, ok)}, [2]string{"a.copy", "ROWS"}), "SHA-256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(tc.data), t.TempDir())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}
