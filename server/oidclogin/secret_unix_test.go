//go:build unix

package oidclogin

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadSecret(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content string
		mode    os.FileMode
		want    string // the secret read; "" when refused
		err     string // in the error when refused
		weak    bool   // refused as ErrWeakSecret
		warns   bool   // logs that others may read it
	}{
		{"owner only", "s3cret\n", 0o600, "s3cret", "", false, false},
		{"read-only", "  s3cret  ", 0o400, "s3cret", "", false, false},
		{"readable by others", "s3cret", 0o644, "s3cret", "", false, true},
		{"writable by the group", "s3cret", 0o620, "", "has mode 0620: other users could replace the secret", true, false},
		{"writable by everyone", "s3cret", 0o606, "", "has mode 0606", true, false},
		{"empty", " \n", 0o600, "", "is empty", true, false},
		{"two lines", "one\ntwo\n", 0o600, "", "more than one line", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "client-secret")
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tc.mode); err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			got, err := ReadSecret(path, slog.New(slog.NewTextHandler(&logs, nil)))
			if tc.want != "" {
				if err != nil || got != tc.want {
					t.Fatalf("ReadSecret = %q, %v; want %q", got, err, tc.want)
				}
			} else if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "--oidc-client-secret-file") ||
				errors.Is(err, ErrWeakSecret) != tc.weak {
				t.Fatalf("ReadSecret = %q, %v; want an error naming --oidc-client-secret-file with %q (weak: %v)", got, err, tc.err, tc.weak)
			}
			if warned := strings.Contains(logs.String(), "readable by other users"); warned != tc.warns {
				t.Errorf("warned %v, want %v:\n%s", warned, tc.warns, logs.String())
			}
			if strings.Contains(logs.String(), "s3cret") {
				t.Errorf("the secret was logged:\n%s", logs.String())
			}
		})
	}
	if _, err := ReadSecret(filepath.Join(t.TempDir(), "missing"), slog.New(slog.DiscardHandler)); err == nil ||
		!strings.Contains(err.Error(), "--oidc-client-secret-file") {
		t.Errorf("missing file: %v", err)
	}
}
