package peerbuild

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeBuild lays out a cache directory the way a finished build does, with
// small files instead of real executables.
func fakeBuild(t *testing.T) (string, *Peers) {
	t.Helper()
	dir := t.TempDir()
	return dir, fakeBuildIn(t, dir)
}

func fakeBuildIn(t *testing.T, dir string) *Peers {
	t.Helper()
	sup := filepath.Join(dir, "bin", SupervisorExecutable)
	os.MkdirAll(filepath.Dir(sup), 0o755)
	os.WriteFile(sup, []byte("supervisor"), 0o755)
	p := &Peers{Dir: dir, Supervisor: sup, SupervisorVersion: SupervisorVersion}
	os.MkdirAll(filepath.Join(dir, "artifacts"), 0o755)
	for _, s := range collectorSpecs() {
		exe := filepath.Join(dir, "collectors", s.Version, CollectorExecutable)
		os.MkdirAll(filepath.Dir(exe), 0o755)
		if err := os.WriteFile(exe, []byte("collector "+s.Version), 0o755); err != nil {
			t.Fatal(err)
		}
		ar := filepath.Join(dir, "artifacts", archiveName(s.Version, "linux", "amd64"))
		if err := writeArchive(ar, exe, CollectorExecutable); err != nil {
			t.Fatal(err)
		}
		es, _, _ := fileSHA256(exe)
		as, n, _ := fileSHA256(ar)
		p.Collectors = append(p.Collectors, Collector{Version: s.Version, Broken: s.Broken, Executable: exe, ExecutableSHA256: es, Archive: ar, ArchiveSHA256: as, ArchiveSize: n})
	}
	if err := writeRecord(dir, p); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadRecord(t *testing.T) {
	dir, want := fakeBuild(t)
	got, err := loadRecord(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Supervisor != want.Supervisor || len(got.Collectors) != 3 || got.Collectors[2].Version != VersionBroken || !got.Collectors[2].Broken {
		t.Errorf("loaded %+v, want %+v", got, want)
	}

	if _, err := loadRecord(t.TempDir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no record: err = %v, want fs.ErrNotExist", err)
	}
}

func TestLoadRecordRejectsStaleCaches(t *testing.T) {
	tests := map[string]struct {
		mutate  func(dir string, p *Peers)
		wantErr string
	}{
		"tampered archive": {
			mutate:  func(_ string, p *Peers) { os.WriteFile(p.Collectors[1].Archive, []byte("x"), 0o644) },
			wantErr: "changed since it was built",
		},
		"tampered executable": {
			mutate:  func(_ string, p *Peers) { os.WriteFile(p.Collectors[0].Executable, []byte("x"), 0o755) },
			wantErr: "changed since it was built",
		},
		"missing supervisor": {
			mutate:  func(_ string, p *Peers) { os.Remove(p.Supervisor) },
			wantErr: "supervisor executable",
		},
		"missing archive": {
			mutate:  func(_ string, p *Peers) { os.Remove(p.Collectors[2].Archive) },
			wantErr: p2(VersionBroken),
		},
		"moved cache": {
			mutate: func(dir string, p *Peers) {
				p.Dir = "/elsewhere"
				writeRecord(dir, p)
			},
			wantErr: "describes /elsewhere",
		},
		"missing collector": {
			mutate: func(dir string, p *Peers) {
				p.Collectors = p.Collectors[:2]
				writeRecord(dir, p)
			},
			wantErr: "lists 2 collectors, want 3",
		},
		"garbled record": {
			mutate:  func(dir string, _ *Peers) { os.WriteFile(filepath.Join(dir, recordName), []byte("{"), 0o644) },
			wantErr: "parse peers.json",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			dir, p := fakeBuild(t)
			tt.mutate(dir, p)
			_, err := loadRecord(dir)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// p2 is the fragment of an archive path that names version.
func p2(version string) string { return "otelcol_" + version }

func TestClearOutputs(t *testing.T) {
	dir, p := fakeBuild(t)
	os.WriteFile(filepath.Join(dir, "lock"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, "build.log"), []byte("log"), 0o644)
	if err := clearOutputs(dir); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "build.log,lock" {
		t.Errorf("after clearOutputs the cache holds %v, want only build.log and lock", names)
	}
	if _, err := os.Stat(p.Collectors[0].Executable); err == nil {
		t.Error("a built executable survived clearOutputs")
	}
	if err := clearOutputs(filepath.Join(dir, "missing")); err == nil {
		t.Error("clearOutputs of a missing directory: no error")
	}
}
