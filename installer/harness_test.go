//go:build linux

package installer_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

const testToken = "s3cr3t-Token_Value.42~"

// result of one install.sh run.
type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// runScript runs install.sh with sh (dash on Debian) and a private TMPDIR, and checks that
// the script leaves no temporary files behind and never prints the token.
func runScript(t *testing.T, args ...string) result {
	t.Helper()
	tmp := t.TempDir()
	cmd := exec.Command("sh", append([]string{"install.sh"}, args...)...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run install.sh: %v", err)
	}
	if strings.Contains(r.stdout+r.stderr, testToken) {
		t.Errorf("install.sh printed the token:\n%s", r)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("install.sh left %d temporary entries in TMPDIR (first %s)", len(left), left[0].Name())
	}
	return r
}

// siteFlags are the flags of a complete binary-mode install under root.
func siteFlags(t testing.TB, a *artifactSet, root string) []string {
	t.Helper()
	tokenFile := filepath.Join(t.TempDir(), "token")
	write(t, tokenFile, []byte(testToken+"\n"), 0o600)
	return []string{
		"--server", "ws://127.0.0.1:4320",
		"--token-file", tokenFile,
		"--site-id", "007",
		"--site-type", "edge",
		"--site-name", `Edge "site" 7`,
		"--site-country", "DE",
		"--site-region", "north",
		"--site-timezone", "Europe/Amsterdam",
		"--environment", "production",
		"--collector-version", "0.149.0",
		"--artifacts", a.dir,
		"--minisign-key", a.publicKey,
		"--root", root,
		"--no-start",
	}
}

// withFlag returns flags with the value of name replaced (or appended).
func withFlag(flags []string, name, value string) []string {
	out := slices.Clone(flags)
	for i := 0; i < len(out)-1; i++ {
		if out[i] == name {
			out[i+1] = value
			return out
		}
	}
	return append(out, name, value)
}

func withoutFlag(flags []string, name string) []string {
	out := slices.Clone(flags)
	for i := 0; i < len(out); i++ {
		if out[i] == name {
			if i+1 < len(out) && !strings.HasPrefix(out[i+1], "--") {
				return slices.Delete(out, i, i+2)
			}
			return slices.Delete(out, i, i+1)
		}
	}
	return out
}

// fileState is what re-running must not change.
type fileState struct {
	mode         fs.FileMode
	size         int64
	mtime, ctime int64
	ino          uint64
	sum, link    string
}

// snapshot records every entry under root.
func snapshot(t *testing.T, root string) map[string]fileState {
	t.Helper()
	m := map[string]fileState{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		s := fileState{mode: fi.Mode(), size: fi.Size(), mtime: fi.ModTime().UnixNano(),
			ctime: st.Ctim.Nano(), ino: st.Ino}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			s.link, err = os.Readlink(p)
		case fi.Mode().IsRegular():
			s.sum, err = fileSum(p)
		}
		rel, _ := filepath.Rel(root, p)
		m[rel] = s
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func fileSum(p string) (string, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return "", err
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:]), nil
}

// diffSnapshots names every path that was added, removed or touched.
func diffSnapshots(a, b map[string]fileState) []string {
	var d []string
	for p, s := range a {
		if s2, ok := b[p]; !ok {
			d = append(d, "removed "+p)
		} else if s2 != s {
			d = append(d, "changed "+p)
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			d = append(d, "added "+p)
		}
	}
	slices.Sort(d)
	return d
}

// manifest renders the tree under root for golden comparison: type, permissions and path
// of every entry, link targets, digests of binaries and the full text of configuration
// files, with root and the test's key replaced by placeholders.
func manifest(t *testing.T, root string, repl ...string) string {
	t.Helper()
	var b strings.Builder
	var texts []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		perm := fi.Mode().Perm()
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, "l      %s -> %s\n", rel, l)
		case fi.IsDir():
			fmt.Fprintf(&b, "d %04o %s/\n", perm, rel)
		case fi.Mode().IsRegular():
			if isText(rel) {
				fmt.Fprintf(&b, "f %04o %s\n", perm, rel)
				texts = append(texts, rel)
			} else {
				sum, err := fileSum(p)
				if err != nil {
					return err
				}
				fmt.Fprintf(&b, "f %04o %s sha256:%s\n", perm, rel, sum[:16])
			}
		default:
			fmt.Fprintf(&b, "? %v %s\n", fi.Mode(), rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, rel := range texts {
		c, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "\n==> %s <==\n%s", rel, c)
	}
	out := strings.ReplaceAll(b.String(), root, "@ROOT@")
	return strings.NewReplacer(repl...).Replace(out)
}

func isText(rel string) bool {
	return strings.HasSuffix(rel, ".yaml") || strings.HasSuffix(rel, ".service") ||
		strings.HasSuffix(rel, "/token") || strings.HasSuffix(rel, ".md")
}

// golden compares got with testdata/name; -update rewrites it.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		write(t, path, []byte(got), 0o644)
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./installer -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the golden file; got:\n%s", path, got)
	}
}
