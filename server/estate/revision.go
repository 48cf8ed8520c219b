package estate

import (
	"bytes"
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
// when dir is in a Git work tree (read with the git command) and holds no
// change the commit does not have, otherwise "sha256:" and a digest over
// every regular file's path and content, in path order. An estate that
// Git ignores, or one with uncommitted changes, is identified by its
// files, so a change to it is a new revision. Hidden files and
// directories (.git, editor state) do not count.
func Revision(dir string) (string, error) {
	if rev, ok := gitHead(dir); ok {
		return rev, nil
	}
	return digest(dir)
}

// CommitAuthor is the author ("Name <email>") of commit rev in the Git
// work tree dir is in; "" when rev is not a commit there (an estate
// identified by its files) or git cannot tell.
func CommitAuthor(dir, rev string) string {
	if strings.HasPrefix(rev, "sha256:") || rev == "" {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "-C", dir, "log", "-1", "--format=%an <%ae>", rev, "--")
	cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0")
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	a := strings.TrimSpace(string(out))
	if len(a) > 200 {
		a = a[:200]
	}
	return a
}

// gitHead is the commit of HEAD of the work tree dir is in, when the
// estate under dir is tracked and clean.
func gitHead(dir string) (string, bool) {
	if _, err := exec.LookPath("git"); err != nil {
		return "", false
	}
	git := func(args ...string) ([]byte, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0")
		return cmd.Output()
	}
	out, err := git("rev-parse", "--verify", "-q", "HEAD")
	rev := strings.TrimSpace(string(out))
	if err != nil || len(rev) < 40 {
		return "", false
	}
	// Ignored: the commit says nothing about these files.
	if _, err := git("check-ignore", "-q", "."); err == nil {
		return "", false
	}
	// Untracked, changed or deleted files below dir: not the commit either.
	status, err := git("status", "--porcelain", "--untracked-files=all", "--", ".")
	if err != nil || len(bytes.TrimSpace(status)) > 0 {
		return "", false
	}
	return rev, true
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
