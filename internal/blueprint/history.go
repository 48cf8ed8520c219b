package blueprint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// ErrNotVersioned means a source root is not inside a Git work tree, so an
// earlier version of a file cannot be found.
var ErrNotVersioned = errors.New("source root is not a Git work tree")

// History reads earlier versions of authored files.
type History interface {
	// Revisions calls yield with the content of the file rel (a slash path
	// relative to the source root dir) at each commit that changed it,
	// newest first, until yield returns false or the history ends. Commits
	// where the file did not exist are skipped. It returns an error wrapping
	// ErrNotVersioned when dir is not inside a Git work tree.
	Revisions(ctx context.Context, dir, rel string, yield func(commit string, content []byte) bool) error
}

// GitHistory is a History backed by the git command. It shells out rather
// than linking a Git implementation: the estate is authored in Git, so git is
// where the render runs, and the binary stays small.
type GitHistory struct {
	// Git is the git executable; "git" (looked up in PATH) when empty.
	Git string
}

var _ History = GitHistory{}

func (g GitHistory) git(ctx context.Context, dir string, args ...string) ([]byte, error) {
	bin := g.Git
	if bin == "" {
		bin = "git"
	}
	cmd := exec.CommandContext(ctx, bin, append([]string{"-C", dir}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// Revisions implements History.
func (g GitHistory) Revisions(ctx context.Context, dir, rel string, yield func(string, []byte) bool) error {
	out, err := g.git(ctx, dir, "rev-parse", "--is-inside-work-tree")
	if err != nil || strings.TrimSpace(string(out)) != "true" {
		if errors.Is(err, exec.ErrNotFound) {
			return fmt.Errorf("%w (%s): %w", ErrNotVersioned, dir, err)
		}
		return fmt.Errorf("%w: %s", ErrNotVersioned, dir)
	}
	out, err = g.git(ctx, dir, "log", "--format=%H", "--", rel)
	if err != nil {
		return err
	}
	for _, commit := range strings.Fields(string(out)) {
		content, err := g.git(ctx, dir, "show", commit+":./"+rel)
		if err != nil {
			continue // the commit deleted the file
		}
		if !yield(commit, content) {
			return nil
		}
	}
	return nil
}
