package estate

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// loadWithin loads dir, failing the test when the load does not end
// within a minute (a load that hangs or runs quadratic).
func loadWithin(t *testing.T, dir string) (*Estate, error) {
	t.Helper()
	type result struct {
		e   *Estate
		err error
	}
	done := make(chan result, 1)
	go func() {
		e, err := Load(dir)
		done <- result{e, err}
	}()
	select {
	case r := <-done:
		return r.e, r.err
	case <-time.After(time.Minute):
		t.Fatal("estate load still running after a minute")
		return nil, nil
	}
}

func wantProblem(t *testing.T, err error, substrs ...string) string {
	t.Helper()
	var le *LoadError
	if !errors.As(err, &le) {
		t.Fatalf("load: %v, want a LoadError", err)
	}
	for _, s := range substrs {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("load error lacks %q:\n%v", s, err)
		}
	}
	return err.Error()
}

func TestEstateFileLimits(t *testing.T) {
	var oneMapping, manyMappings, big strings.Builder
	oneMapping.WriteString("- token: site\n  labels:\n")
	for i := range 200_000 { // 3 MB: under the byte bound
		fmt.Fprintf(&oneMapping, "    k%06d: v\n", i)
	}
	for m := range 12 {
		fmt.Fprintf(&manyMappings, "- token: site%d\n  labels:\n", m)
		for i := range 9_000 {
			fmt.Fprintf(&manyMappings, "    k%05d: v\n", i)
		}
	}
	big.WriteString("- token: site\n  labels: {a: b}\n# ")
	big.WriteString(strings.Repeat("x", MaxFileBytes))
	for _, tc := range []struct {
		name, content string
		want          []string
	}{
		{"one mapping of 200 000 keys", oneMapping.String(), []string{"inventory/x.yaml:3: a mapping of 200000 keys: at most 10000"}},
		{"108 000 keys in all", manyMappings.String(), []string{"inventory/x.yaml: more than 100000 keys"}},
		{"a file over 4 MiB", big.String(), []string{"inventory/x.yaml: cannot read: larger than 4 MiB"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, map[string]string{"inventory/x.yaml": tc.content})
			_, err := loadWithin(t, dir)
			wantProblem(t, err, tc.want...)
		})
	}
}

// catalog writes a package version whose artifact is file, declared with sum.
func catalog(t *testing.T, dir, file, sum string) {
	writeTree(t, dir, map[string]string{"packages/otelcol-contrib/0.1.0.yaml": fmt.Sprintf(
		"name: otelcol-contrib\nversion: 0.1.0\nartifacts:\n  - {os: linux, arch: amd64, file: %s, sha256: %s, executable: otelcol-contrib}\n", file, sum)})
}

func TestSymlinksStayInside(t *testing.T) {
	outsideFile := filepath.Join(t.TempDir(), "secret")
	secret := []byte("not for agents\n")
	if err := os.WriteFile(outsideFile, secret, 0o644); err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(secret)
	realSum := hex.EncodeToString(h[:])

	t.Run("artifact linked out of the estate", func(t *testing.T) {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, "artifacts"), 0o755)
		os.Symlink(outsideFile, filepath.Join(dir, "artifacts", "a.tar.gz"))
		catalog(t, dir, "artifacts/a.tar.gz", strings.Repeat("0", 64))
		msg := wantProblem(t, mustFail(loadWithin(t, dir)), "file artifacts/a.tar.gz resolves outside the estate")
		if strings.Contains(msg, realSum) {
			t.Errorf("the load error reveals the SHA-256 of a file outside the estate:\n%s", msg)
		}
		if _, err := OpenFile(dir, "artifacts/a.tar.gz"); !errors.Is(err, ErrOutsideEstate) {
			t.Errorf("OpenFile of the link: %v, want ErrOutsideEstate", err)
		}
	})
	t.Run("directory linked out of the estate", func(t *testing.T) {
		dir := t.TempDir()
		os.Symlink(filepath.Dir(outsideFile), filepath.Join(dir, "artifacts"))
		catalog(t, dir, "artifacts/secret", realSum)
		wantProblem(t, mustFail(loadWithin(t, dir)), "resolves outside the estate")
	})
	t.Run("link inside the estate", func(t *testing.T) {
		dir := t.TempDir()
		writeTree(t, dir, map[string]string{"store/a.tar.gz": string(secret)})
		os.MkdirAll(filepath.Join(dir, "artifacts"), 0o755)
		os.Symlink("../store/a.tar.gz", filepath.Join(dir, "artifacts", "a.tar.gz"))
		catalog(t, dir, "artifacts/a.tar.gz", realSum)
		if _, err := loadWithin(t, dir); err != nil {
			t.Fatalf("a link within the estate: %v", err)
		}
	})
	t.Run("estate file linked out of the estate", func(t *testing.T) {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, "inventory"), 0o755)
		os.Symlink(outsideFile, filepath.Join(dir, "inventory", "x.yaml"))
		wantProblem(t, mustFail(loadWithin(t, dir)), "inventory/x.yaml: cannot read: inventory/x.yaml: resolves outside the estate")
	})
	if runtime.GOOS != "windows" {
		t.Run("FIFO", func(t *testing.T) {
			dir := t.TempDir()
			os.MkdirAll(filepath.Join(dir, "inventory"), 0o755)
			if err := syscall.Mkfifo(filepath.Join(dir, "inventory", "x.yaml"), 0o644); err != nil {
				t.Fatal(err)
			}
			wantProblem(t, mustFail(loadWithin(t, dir)), "not a regular file")
		})
	}
}

func mustFail(_ *Estate, err error) error { return err }
