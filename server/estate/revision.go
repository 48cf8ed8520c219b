package estate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Revision identifies what an estate directory holds: the commit of HEAD
// when dir is in a Git work tree (read with the git command), otherwise
// "sha256:" and a digest over every regular file's path and content, in
// path order. Hidden files and directories (.git, editor state) do not
// count.
func Revision(dir string) (string, error) {
	if rev, ok := gitHead(dir); ok {
		return rev, nil
	}
	return digest(dir)
}

// gitHead is the commit of HEAD of the work tree dir is in.
func gitHead(dir string) (string, bool) {
	if _, err := exec.LookPath("git"); err != nil {
		return "", false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "-C", dir, "rev-parse", "--verify", "-q", "HEAD")
	cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0")
	out, err := cmd.Output()
	if err != nil {
		return "", false
	}
	rev := strings.TrimSpace(string(out))
	return rev, len(rev) >= 40
}

func digest(dir string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		fmt.Fprintf(h, "%s\x00", filepath.ToSlash(rel))
		n, err := io.Copy(h, f)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "\x00%d\x00", n)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("estate revision: %w", err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}
