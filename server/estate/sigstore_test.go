package estate

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const testBundle = `{"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json", "verificationMaterial": {}, "messageSignature": {}}`

// An artifact's sigstoreBundle file is read into the signature its offer
// carries; a file that is no bundle, too large, outside the estate, or
// beside a minisign signature is refused, naming the file.
func TestSigstoreBundles(t *testing.T) {
	art := []byte("collector archive")
	h := sha256.Sum256(art)
	sum := hex.EncodeToString(h[:])
	pkg := func(extra string) string {
		return fmt.Sprintf("name: otelcol-contrib\nversion: 0.1.0\nartifacts:\n  - {os: linux, arch: amd64, file: art.tar.gz, sha256: %s, executable: otelcol-contrib%s}\n", sum, extra)
	}
	outside := filepath.Join(t.TempDir(), "b.sigstore.json")
	os.WriteFile(outside, []byte(testBundle), 0o644)

	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"art.tar.gz": string(art), "art.tar.gz.sigstore.json": testBundle,
		"packages/otelcol-contrib/0.1.0.yaml": pkg(", sigstoreBundle: art.tar.gz.sigstore.json")})
	e, err := loadWithin(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Package("otelcol-contrib", "0.1.0").Artifacts[0].Signature; got != testBundle {
		t.Fatalf("offered signature %q", got)
	}

	for _, tc := range []struct{ name, file, extra, want string }{
		{"not a bundle", "untrusted comment: minisign\nRWQ\n", ", sigstoreBundle: b.json", "sigstoreBundle b.json is not a Sigstore bundle"},
		{"too large", "{" + strings.Repeat(" ", MaxSigstoreBundle) + "}", ", sigstoreBundle: b.json", "sigstoreBundle b.json is larger than 256 KiB"},
		{"missing", "", ", sigstoreBundle: none.json", "sigstoreBundle none.json"},
		{"outside the estate", "", ", sigstoreBundle: ../x.json", `sigstoreBundle "../x.json" must be a path inside the estate`},
		{"with a minisign signature", testBundle, ", sigstoreBundle: b.json, signature: x", "set signature or sigstoreBundle, not both"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{"art.tar.gz": string(art), "packages/otelcol-contrib/0.1.0.yaml": pkg(tc.extra)}
			if tc.file != "" {
				files["b.json"] = tc.file
			}
			writeTree(t, dir, files)
			_, err := loadWithin(t, dir)
			wantProblem(t, err, "packages/otelcol-contrib/0.1.0.yaml:4: artifacts[0]: "+strings.TrimPrefix(tc.want, "artifacts[0]: "))
		})
	}
	t.Run("a link out of the estate", func(t *testing.T) {
		dir := t.TempDir()
		writeTree(t, dir, map[string]string{"art.tar.gz": string(art), "packages/otelcol-contrib/0.1.0.yaml": pkg(", sigstoreBundle: b.json")})
		if err := os.Symlink(outside, filepath.Join(dir, "b.json")); err != nil {
			t.Fatal(err)
		}
		_, err := loadWithin(t, dir)
		wantProblem(t, err, "artifacts[0]: sigstoreBundle b.json")
	})
}
