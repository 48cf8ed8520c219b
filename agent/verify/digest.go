package verify

import (
	"fmt"
	"io"

	"golang.org/x/crypto/blake2b"
)

// minisignDigestReader returns a function that streams r into BLAKE2b-512.
func minisignDigestReader(r io.Reader) func() ([]byte, error) {
	return func() ([]byte, error) {
		h, _ := blake2b.New512(nil)
		if _, err := io.Copy(h, r); err != nil {
			return nil, fmt.Errorf("verify: read: %w", err)
		}
		return h.Sum(nil), nil
	}
}
