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
// This file is cross-compiled (make crossbuild); current_windows_test.go
// tests it on a real Windows. Under Wine 8 it cannot run: Wine's cmd says
// it failed to open the junction's path and exits 0, which the switch
// reports as "made no junction".

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

func switchCurrent(root, dir string, staged func()) error {
	cur := filepath.Join(root, "current")
	tmp := filepath.Join(root, ".current.tmp")
	old := filepath.Join(root, ".current.old")
	os.Remove(tmp)
	target := filepath.Join(root, "versions", dir)
	out, err := exec.Command("cmd", "/c", "mklink", "/J", tmp, target).CombinedOutput()
	if err != nil {
		return fmt.Errorf("switch: mklink /J %s %s: %w: %s", tmp, target, err, strings.TrimSpace(string(out)))
	}
	// A cmd that cannot make the junction may still exit 0 (Wine's does).
	if _, err := os.Lstat(tmp); err != nil {
		return fmt.Errorf("switch: mklink /J %s %s made no junction (%v; it said: %s)", tmp, target, err, strings.TrimSpace(string(out)))
	}
	staged()
	os.Remove(old)
	if _, err := os.Lstat(cur); err == nil {
		if err := os.Rename(cur, old); err != nil {
			return fmt.Errorf("switch: %w", err)
		}
	}
	if err := os.Rename(tmp, cur); err != nil {
		os.Rename(old, cur)
		return fmt.Errorf("switch: %w", err)
	}
	os.Remove(old) // removes the junction only, never the target's content
	return nil
}

func readCurrent(root string) (string, error) {
	cur := filepath.Join(root, "current")
	if _, err := os.Lstat(cur); errors.Is(err, os.ErrNotExist) {
		// A crash between the two renames: the previous junction is intact.
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
		return "", fmt.Errorf("read %s: %w", cur, err)
	}
	rel, err := filepath.Rel(filepath.Join(root, "versions"), t)
	if err != nil || strings.ContainsAny(rel, `\/`) || strings.HasPrefix(rel, "..") {
		return "", fmt.Errorf("%s points at %s, outside %s\\versions", cur, t, root)
	}
	return rel, nil
}

func cleanupCurrentTemp(root string) {
	os.Remove(filepath.Join(root, ".current.tmp"))
}
