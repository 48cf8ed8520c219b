package peerbuild

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"aead.dev/minisign"
)

// Sign returns the minisign signature (the contents of a ".minisig" file) of
// the file at path, made with key. The signature is the pre-hashed kind
// (HashEdDSA) that the minisign tool makes by default; its trusted comment
// names the file and the signing time. Tests generate key with
// minisign.GenerateKey and verify with minisign.Verify or minisign.Reader.
func Sign(path string, key minisign.PrivateKey) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %s to sign: %w", path, err)
	}
	defer f.Close()
	r := minisign.NewReader(f)
	if _, err := io.Copy(io.Discard, r); err != nil {
		return nil, fmt.Errorf("read %s to sign: %w", path, err)
	}
	trusted := "timestamp:" + strconv.FormatInt(time.Now().Unix(), 10) + "\tfile:" + filepath.Base(path) + "\thashed"
	untrusted := "signature from minisign secret key " + strings.ToUpper(strconv.FormatUint(key.ID(), 16))
	return r.SignWithComments(key, trusted, untrusted), nil
}

// SignTo signs the file at path with key and writes the signature to sigPath
// (conventionally path+".minisig"). The peers cache is shared between test
// processes: write signatures into the test's own directory, never next to the
// cached archives.
func SignTo(path, sigPath string, key minisign.PrivateKey) error {
	sig, err := Sign(path, key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(sigPath, sig, 0o644); err != nil {
		return fmt.Errorf("write signature %s: %w", sigPath, err)
	}
	return nil
}
