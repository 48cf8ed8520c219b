package server

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"unicode"

	"github.com/myriarch/myriarch/internal/fileperm"
)

// prepareDataDir creates the data directory (0700) or tightens an existing
// one that other users may enter: it holds the database and the admin token.
func prepareDataDir(dir string, log *slog.Logger) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	was, changed, err := fileperm.Tighten(dir, 0o700)
	if err != nil {
		return fmt.Errorf("data dir %s: restrict to its owner: %w", dir, err)
	}
	if changed {
		log.Warn("data directory was open to other users; restricted to its owner", "dir", dir, "was", fmt.Sprintf("%04o", was), "now", "0700")
	}
	return nil
}

// MinAdminTokenLen is the shortest admin token accepted.
const MinAdminTokenLen = 32

// ErrWeakAdminToken is an admin token file that others may change, or a
// token too short or malformed to be a secret.
var ErrWeakAdminToken = errors.New("admin token refused")

// checkAdminToken checks the admin token read from path. own is the
// generated <data-dir>/admin.token, which is tightened to 0600; a file
// given with --admin-token-file is refused when other users may change it
// and logged when they may read it.
func checkAdminToken(path, tok string, own bool, log *slog.Logger) error {
	if own {
		if was, changed, err := fileperm.Tighten(path, 0o600); err != nil {
			return fmt.Errorf("admin token %s: restrict to its owner: %w", path, err)
		} else if changed {
			log.Warn("admin token file was open to other users; restricted to its owner", "file", path, "was", fmt.Sprintf("%04o", was))
		}
	} else {
		fi, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("admin token: %w", err)
		}
		if fileperm.WritableByOthers(fi) {
			return fmt.Errorf("%w: --admin-token-file %s has mode %04o: other users could replace the admin token (chmod go-w %s)",
				ErrWeakAdminToken, path, fi.Mode().Perm(), path)
		}
		if fileperm.ReadableByOthers(fi) {
			log.Warn("admin token file is readable by other users", "file", path, "mode", fmt.Sprintf("%04o", fi.Mode().Perm()))
		}
	}
	switch {
	case len(tok) < MinAdminTokenLen:
		return fmt.Errorf("%w: the token in %s has %d characters, at least %d are required (e.g. openssl rand -hex 32)",
			ErrWeakAdminToken, path, len(tok), MinAdminTokenLen)
	case strings.IndexFunc(tok, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return fmt.Errorf("%w: the token in %s contains white space or control characters", ErrWeakAdminToken, path)
	}
	return nil
}
