package oidclogin

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/myriarch/myriarch/internal/fileperm"
)

// ErrWeakSecret is a client secret file that other users may change, or
// that holds no secret.
var ErrWeakSecret = errors.New("OpenID Connect client secret refused")

// ReadSecret reads the client secret from path (--oidc-client-secret-file):
// refused when other users may change the file, logged when they may read
// it. The secret itself is never logged.
func ReadSecret(path string, log *slog.Logger) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("--oidc-client-secret-file: %w", err)
	}
	if fileperm.WritableByOthers(fi) {
		return "", fmt.Errorf("%w: --oidc-client-secret-file %s has mode %04o: other users could replace the secret (chmod go-w %s)",
			ErrWeakSecret, path, fi.Mode().Perm(), path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--oidc-client-secret-file: %w", err)
	}
	secret := strings.TrimSpace(string(data))
	switch {
	case secret == "":
		return "", fmt.Errorf("%w: --oidc-client-secret-file %s is empty", ErrWeakSecret, path)
	case strings.ContainsAny(secret, "\r\n"):
		return "", fmt.Errorf("%w: --oidc-client-secret-file %s holds more than one line", ErrWeakSecret, path)
	}
	if fileperm.ReadableByOthers(fi) {
		log.Warn("OpenID Connect client secret file is readable by other users", "file", path, "mode", fmt.Sprintf("%04o", fi.Mode().Perm()))
	}
	return secret, nil
}
