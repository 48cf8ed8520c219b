package server_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/oidclogin"
)

// The client secret's file is read at the start: one that other users
// could change, or that is missing, stops it, naming the setting.
func TestOIDCClientSecretFileStopsTheStart(t *testing.T) {
	dir := t.TempDir()
	weak := filepath.Join(dir, "weak")
	if err := os.WriteFile(weak, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(weak, 0o666); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, file string
		weak       bool
	}{
		{"writable by others", weak, true},
		{"missing", filepath.Join(dir, "missing"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := server.New(context.Background(), server.Options{DataDir: t.TempDir(), Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0",
				OIDC: oidclogin.Settings{Issuer: "https://idp.example.com", ClientID: "myriarch", ClientSecretFile: tc.file,
					Roles: oidclogin.Roles{"sre": {Role: "operator"}}}})
			if err == nil || !strings.Contains(err.Error(), "--oidc-client-secret-file") || errors.Is(err, oidclogin.ErrWeakSecret) != tc.weak {
				t.Fatalf("New = %v, want a refusal naming --oidc-client-secret-file", err)
			}
		})
	}
}
