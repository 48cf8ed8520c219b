package binary

// Windows: creating symbolic links needs SeCreateSymbolicLinkPrivilege
// (administrator or developer mode), which a service account often lacks.
// <root>\current is therefore a directory junction (mklink /J), which any
// user may create, pointing at <root>\versions\<dir>. A junction cannot be
// renamed over an existing directory, so the switch is three renames:
//
//	versions\<dir> ← junction .current.tmp      (staged)
//	current → .current.old ; .current.tmp → current ; remove .current.old
//
// Between the two renames `current` is briefly missing; the supervisor is
// stopped during the switch and readCurrent/recovery restore .current.old
// when a crash hit that gap, so the journal replay always finds a target.
//
// Where no junction can be made (a volume without reparse points, such as
// FAT; Wine 8, whose cmd says it failed to open the path and exits 0),
// .current.tmp is a copy of the version instead, holding its name in
// currentMarker, switched by the same renames.

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/myriarch/myriarch/internal/fileremove"
)

// currentMarker, in a current that is a copy, names the version it is.
const currentMarker = ".myriarch-version"

// makeJunction makes link a directory junction to target.
var makeJunction = func(link, target string) error {
	out, err := exec.Command("cmd", "/c", "mklink", "/J", link, target).CombinedOutput()
	if err != nil {
		return fmt.Errorf("mklink /J %s %s: %w: %s", link, target, err, strings.TrimSpace(string(out)))
	}
	// A cmd that cannot make the junction may still exit 0 (Wine's does).
	if _, err := os.Readlink(link); err != nil {
		os.Remove(link)
		return fmt.Errorf("mklink /J %s %s made no junction (%v; it said: %s)", link, target, err, strings.TrimSpace(string(out)))
	}
	return nil
}

func switchCurrent(root, dir string, staged func()) error {
	cur := filepath.Join(root, "current")
	tmp := filepath.Join(root, ".current.tmp")
	old := filepath.Join(root, ".current.old")
	if err := removeCurrentEntry(tmp); err != nil {
		return fmt.Errorf("switch: %w", err)
	}
	target := filepath.Join(root, "versions", dir)
	if err := makeJunction(tmp, target); err != nil {
		if cerr := copyVersion(target, tmp, dir); cerr != nil {
			removeCurrentEntry(tmp)
			return fmt.Errorf("switch: %w; a copy instead: %w", err, cerr)
		}
	}
	staged()
	if err := removeCurrentEntry(old); err != nil {
		return fmt.Errorf("switch: %w", err)
	}
	if _, err := os.Lstat(cur); err == nil {
		if err := os.Rename(cur, old); err != nil {
			return fmt.Errorf("switch: %w", err)
		}
	}
	if err := os.Rename(tmp, cur); err != nil {
		os.Rename(old, cur)
		return fmt.Errorf("switch: %w", err)
	}
	removeCurrentEntry(old) // else removed before the next switch
	return nil
}

// removeCurrentEntry removes a junction alone, never the target's content,
// and a copy whole.
func removeCurrentEntry(p string) error {
	if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if _, err := os.Readlink(p); err == nil {
		return os.Remove(p)
	}
	return fileremove.Tree(p)
}

// copyVersion copies the version directory src to dst, marked as dir.
func copyVersion(src, dst, dir string) error {
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case d.Type().IsRegular():
			return copyFile(p, to)
		}
		return fmt.Errorf("%s: not a file or directory", p)
	})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dst, currentMarker), []byte(dir+"\n"), 0o644)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, fi.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err = io.Copy(out, in); err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

func readCurrent(root string) (string, error) {
	cur := filepath.Join(root, "current")
	if _, err := os.Lstat(cur); errors.Is(err, os.ErrNotExist) {
		// A crash between the two renames: the previous current is intact.
		if _, err := os.Lstat(filepath.Join(root, ".current.old")); err == nil {
			if err := os.Rename(filepath.Join(root, ".current.old"), cur); err != nil {
				return "", err
			}
		}
	}
	t, err := os.Readlink(cur)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		// Not a junction: a copy names its version.
		b, merr := os.ReadFile(filepath.Join(cur, currentMarker))
		if merr != nil {
			return "", fmt.Errorf("read %s: neither a junction (%v) nor a copy of a version (%w)", cur, err, merr)
		}
		name := strings.TrimSpace(string(b))
		if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `\/:`) {
			return "", fmt.Errorf("%s names the version %q, not a directory of %s\\versions", filepath.Join(cur, currentMarker), name, root)
		}
		return name, nil
	}
	rel, err := filepath.Rel(filepath.Join(root, "versions"), t)
	if err != nil || strings.ContainsAny(rel, `\/`) || strings.HasPrefix(rel, "..") {
		return "", fmt.Errorf("%s points at %s, outside %s\\versions", cur, t, root)
	}
	return rel, nil
}

func cleanupCurrentTemp(root string) {
	removeCurrentEntry(filepath.Join(root, ".current.tmp"))
}
