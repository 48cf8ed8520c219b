package estate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Bounds of a revision checked out for a plan: what a hostile commit can
// make the server write to its temporary directory.
const (
	MaxCheckoutBytes = 2 << 30
	MaxCheckoutFiles = 200_000
)

// ErrRevision marks a revision LoadRevision refuses: not a Git estate, no
// such commit, or files that leave the estate.
var ErrRevision = errors.New("plan refused")

// revisionRE is what a revision may be written as: names, hashes and
// Git's suffixes (HEAD~2, main^, v1.2@{1}); never an option.
var revisionRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/@{}^~-]{0,199}$`)

// LoadRevision loads the estate as Git commit rev of the work tree dir is
// in holds it, without touching dir: the repository is cloned (sharing its
// objects) into a temporary directory with the commit checked out, so that
// Blueprints pinned to earlier versions read the commit's own history. The
// estate's Revision and Author are the commit's; done removes the
// checkout, once the estate is no longer read (its Blueprints are compiled).
// A revision that is not a commit, a dir that is not in a Git work tree,
// and a tree whose files or links leave the estate, or are over the
// bounds, are refused (ErrRevision) with the reason; a tree that loads
// with problems is a *LoadError, as for Load.
func LoadRevision(ctx context.Context, dir, rev string) (e *Estate, done func(), err error) {
	if !revisionRE.MatchString(rev) || strings.Contains(rev, "..") {
		return nil, nil, fmt.Errorf("%w: %q is not a Git revision name", ErrRevision, rev)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	git := func(in string, args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, "git", append([]string{"-C", in}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0", "GIT_TERMINAL_PROMPT=0")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return out, fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
		}
		return out, nil
	}
	if out, err := git(dir, "rev-parse", "--is-inside-work-tree"); err != nil || strings.TrimSpace(string(out)) != "true" {
		return nil, nil, fmt.Errorf("%w: the estate %s is not in a Git work tree, so it has no revisions (plan it without one: the directory as it is)", ErrRevision, dir)
	}
	out, err := git(dir, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	commit := strings.TrimSpace(string(out))
	if err != nil || len(commit) < 40 {
		return nil, nil, fmt.Errorf("%w: revision %q does not exist in the estate's Git repository", ErrRevision, rev)
	}
	out, err = git(dir, "rev-parse", "--show-toplevel", "--show-prefix")
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if err != nil || len(lines) < 1 {
		return nil, nil, fmt.Errorf("estate %s: %w", dir, err)
	}
	top, prefix := lines[0], ""
	if len(lines) > 1 {
		prefix = strings.TrimSuffix(lines[1], "/")
	}
	// What the checkout will write, before it is written.
	tree := commit
	if prefix != "" {
		tree += ":" + prefix
	}
	out, err = git(dir, "ls-tree", "-r", "-l", "-z", "--full-tree", tree)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: revision %s has no estate at %s: %w", ErrRevision, rev, prefix, err)
	}
	if err := checkTree(out); err != nil {
		return nil, nil, fmt.Errorf("revision %s (%.12s): %w", rev, commit, err)
	}

	tmp, err := os.MkdirTemp("", "myriarch-plan-")
	if err != nil {
		return nil, nil, fmt.Errorf("revision %s: %w", rev, err)
	}
	remove := func() { os.RemoveAll(tmp) }
	defer func() {
		if err != nil {
			remove()
		}
	}()
	repo := filepath.Join(tmp, "repo")
	if _, err = git(tmp, "clone", "--quiet", "--shared", "--no-checkout", "--", top, repo); err != nil {
		return nil, nil, fmt.Errorf("revision %s: %w", rev, err)
	}
	if prefix != "" {
		if _, err = git(repo, "sparse-checkout", "set", "--", prefix); err != nil {
			return nil, nil, fmt.Errorf("revision %s: %w", rev, err)
		}
	}
	if _, err = git(repo, "-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", commit); err != nil {
		return nil, nil, fmt.Errorf("revision %s: %w", rev, err)
	}
	root := filepath.Join(repo, filepath.FromSlash(prefix))
	if err = checkLinks(root); err != nil {
		return nil, nil, fmt.Errorf("revision %s (%.12s): %w", rev, commit, err)
	}
	e, err = Load(root)
	if err != nil {
		return nil, nil, err
	}
	e.Revision, e.Author = commit, CommitAuthor(dir, commit)
	return e, remove, nil
}

// checkTree refuses a tree (git ls-tree -r -l -z) over the bounds, or
// with a path that leaves the estate or an entry that is neither a file
// nor a link (a submodule).
func checkTree(out []byte) error {
	var files int
	var size int64
	for _, entry := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if entry == "" {
			continue
		}
		meta, name, ok := strings.Cut(entry, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 4 {
			return fmt.Errorf("git ls-tree: unexpected entry %q", entry)
		}
		clean := path.Clean(name)
		if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") || strings.Contains(name, "\\") {
			return fmt.Errorf("%w: %s leaves the estate", ErrRevision, name)
		}
		switch f[0] {
		case "100644", "100755", "120000":
		default:
			return fmt.Errorf("%w: %s is neither a file nor a link (mode %s)", ErrRevision, name, f[0])
		}
		if files++; files > MaxCheckoutFiles {
			return fmt.Errorf("%w: more than %d files", ErrRevision, MaxCheckoutFiles)
		}
		n, _ := strconv.ParseInt(f[3], 10, 64)
		if size += n; size > MaxCheckoutBytes {
			return fmt.Errorf("%w: more than %d bytes of files", ErrRevision, int64(MaxCheckoutBytes))
		}
	}
	return nil
}

// checkLinks refuses a symbolic link under root that leads out of it.
func checkLinks(root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		if outside(root, rel) {
			t, _ := os.Readlink(p)
			return fmt.Errorf("%w: %s is a link to %s, which leaves the estate", ErrRevision, filepath.ToSlash(rel), t)
		}
		return nil
	})
}
