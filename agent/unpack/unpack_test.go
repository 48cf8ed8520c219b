package unpack

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

var elf = append([]byte("\x7fELF"), bytes.Repeat([]byte{1}, 100)...)

type entry struct {
	name     string
	typ      byte // tar type
	mode     int64
	body     []byte
	linkname string
}

func tarGz(t *testing.T, entries []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		mode := e.mode
		if mode == 0 {
			mode = 0o644
		}
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: mode, Size: int64(len(e.body)), Linkname: e.linkname}
		if e.typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeReg {
			tw.Write(e.body)
		}
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

func zipOf(t *testing.T, entries []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		switch e.typ {
		case tar.TypeSymlink:
			h.SetMode(fs.ModeSymlink | 0o777)
		case tar.TypeDir:
			h.SetMode(fs.ModeDir | 0o755)
		default:
			h.SetMode(fs.FileMode(max(e.mode, 0o644)))
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeSymlink {
			w.Write([]byte(e.linkname))
		} else {
			w.Write(e.body)
		}
	}
	zw.Close()
	return buf.Bytes()
}

func opts() Options {
	return Options{Executable: "otelcol", MaxEntrySize: 1 << 20, MaxTotalSize: 2 << 20}
}

func TestUnpackGood(t *testing.T) {
	cases := []struct {
		name  string
		data  func(t *testing.T) []byte
		extra string // another file that must exist
	}{
		{"raw ELF", func(*testing.T) []byte { return elf }, ""},
		{"tar.gz", func(t *testing.T) []byte {
			return tarGz(t, []entry{{name: "./", typ: tar.TypeDir}, {name: "./otelcol", typ: tar.TypeReg, mode: 0o755, body: elf},
				{name: "LICENSE", typ: tar.TypeReg, body: []byte("apache")}})
		}, "LICENSE"},
		{"tar.gz under one top-level dir, exe without x bit", func(t *testing.T) []byte {
			return tarGz(t, []entry{{name: "otelcol_0.149.0/otelcol", typ: tar.TypeReg, mode: 0o644, body: elf},
				{name: "otelcol_0.149.0/docs/README", typ: tar.TypeReg, body: []byte("r")}})
		}, "docs/README"},
		{"zip", func(t *testing.T) []byte {
			return zipOf(t, []entry{{name: "conf/", typ: tar.TypeDir}, {name: "otelcol", typ: tar.TypeReg, mode: 0o755, body: elf},
				{name: "conf/a.yaml", typ: tar.TypeReg, body: []byte("a: 1")}})
		}, "conf/a.yaml"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			src := filepath.Join(dir, "artifact")
			os.WriteFile(src, tc.data(t), 0o600)
			versions := filepath.Join(dir, "versions")
			os.Mkdir(versions, 0o755)
			got, err := Unpack(src, versions, "0.149.0-abcdef12", opts())
			if err != nil {
				t.Fatal(err)
			}
			if got != filepath.Join(versions, "0.149.0-abcdef12") {
				t.Fatalf("dir %s", got)
			}
			st, err := os.Stat(filepath.Join(got, "otelcol"))
			if err != nil || st.Mode().Perm()&0o100 == 0 {
				t.Fatalf("executable: %v %v", st, err)
			}
			b, _ := os.ReadFile(filepath.Join(got, "otelcol"))
			if !bytes.Equal(b, elf) {
				t.Fatal("executable content differs")
			}
			if tc.extra != "" {
				if _, err := os.Stat(filepath.Join(got, tc.extra)); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := os.Stat(got + ".tmp"); !os.IsNotExist(err) {
				t.Fatal(".tmp left behind")
			}
		})
	}
}

func TestUnpackRefuses(t *testing.T) {
	big := bytes.Repeat([]byte{0}, 2<<20)
	good := entry{name: "otelcol", typ: tar.TypeReg, mode: 0o755, body: elf}
	cases := []struct {
		name string
		data func(t *testing.T) []byte
		want error
	}{
		{"tar ../", func(t *testing.T) []byte {
			return tarGz(t, []entry{good, {name: "../evil", typ: tar.TypeReg, body: []byte("x")}})
		}, ErrUnsafePath},
		{"tar nested ..", func(t *testing.T) []byte {
			return tarGz(t, []entry{good, {name: "a/../../evil", typ: tar.TypeReg, body: []byte("x")}})
		}, ErrUnsafePath},
		{"tar absolute path", func(t *testing.T) []byte {
			return tarGz(t, []entry{good, {name: "/etc/cron.d/evil", typ: tar.TypeReg, body: []byte("x")}})
		}, ErrUnsafePath},
		{"tar windows drive path", func(t *testing.T) []byte {
			return tarGz(t, []entry{good, {name: `C:\evil`, typ: tar.TypeReg, body: []byte("x")}})
		}, ErrUnsafePath},
		{"tar symlink", func(t *testing.T) []byte {
			return tarGz(t, []entry{{name: "otelcol", typ: tar.TypeSymlink, linkname: "/bin/sh"}})
		}, ErrLink},
		{"tar hardlink", func(t *testing.T) []byte {
			return tarGz(t, []entry{good, {name: "x", typ: tar.TypeLink, linkname: "otelcol"}})
		}, ErrLink},
		{"tar char device", func(t *testing.T) []byte {
			return tarGz(t, []entry{good, {name: "null", typ: tar.TypeChar}})
		}, ErrSpecialFile},
		{"tar fifo", func(t *testing.T) []byte {
			return tarGz(t, []entry{good, {name: "p", typ: tar.TypeFifo}})
		}, ErrSpecialFile},
		{"tar oversize entry", func(t *testing.T) []byte {
			return tarGz(t, []entry{good, {name: "big", typ: tar.TypeReg, body: big}})
		}, ErrEntryTooLarge},
		{"tar total over cap", func(t *testing.T) []byte {
			return tarGz(t, []entry{good, {name: "a", typ: tar.TypeReg, body: big[:1<<20]}, {name: "b", typ: tar.TypeReg, body: big[:1<<20]}})
		}, ErrTooLarge},
		{"tar duplicate", func(t *testing.T) []byte { return tarGz(t, []entry{good, good}) }, ErrDuplicate},
		{"tar missing executable", func(t *testing.T) []byte {
			return tarGz(t, []entry{{name: "otelcol-contrib", typ: tar.TypeReg, body: elf}})
		}, ErrMissingExecutable},
		{"tar executable is a directory", func(t *testing.T) []byte {
			return tarGz(t, []entry{{name: "otelcol/", typ: tar.TypeDir}})
		}, ErrMissingExecutable},
		{"zip ../", func(t *testing.T) []byte {
			return zipOf(t, []entry{good, {name: "../evil", typ: tar.TypeReg, body: []byte("x")}})
		}, ErrUnsafePath},
		{"zip absolute", func(t *testing.T) []byte {
			return zipOf(t, []entry{good, {name: "/evil", typ: tar.TypeReg, body: []byte("x")}})
		}, ErrUnsafePath},
		{"zip symlink", func(t *testing.T) []byte {
			return zipOf(t, []entry{good, {name: "link", typ: tar.TypeSymlink, linkname: "/etc/passwd"}})
		}, ErrLink},
		{"zip oversize", func(t *testing.T) []byte {
			return zipOf(t, []entry{good, {name: "big", typ: tar.TypeReg, body: big}})
		}, ErrEntryTooLarge},
		{"unknown format", func(*testing.T) []byte { return []byte("#!/bin/sh\necho hi\n") }, ErrUnknownFormat},
		{"empty file", func(*testing.T) []byte { return nil }, ErrUnknownFormat},
		{"corrupt gzip", func(*testing.T) []byte { return []byte{0x1f, 0x8b, 0, 0, 0} }, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			src := filepath.Join(dir, "artifact")
			os.WriteFile(src, tc.data(t), 0o600)
			versions := filepath.Join(dir, "versions")
			os.Mkdir(versions, 0o755)
			_, err := Unpack(src, versions, "v", opts())
			if err == nil {
				t.Fatal("want an error")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			left, _ := os.ReadDir(versions)
			if len(left) != 0 {
				t.Fatalf("left behind: %v", left)
			}
			if _, err := os.Stat(filepath.Join(dir, "evil")); !os.IsNotExist(err) {
				t.Fatal("file escaped the version directory")
			}
		})
	}
}

func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		head []byte
		want Format
	}{
		{[]byte{0x1f, 0x8b, 8}, TarGz},
		{[]byte("PK\x03\x04"), Zip},
		{[]byte("\x7fELF\x02"), Raw},
		{[]byte("MZ\x90\x00"), Raw},
		{[]byte{0xcf, 0xfa, 0xed, 0xfe}, Raw},
	} {
		if got, err := Detect(tc.head); err != nil || got != tc.want {
			t.Errorf("% x: %v %v", tc.head, got, err)
		}
	}
}
