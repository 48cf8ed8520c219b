//go:build linux

package binary

import (
	"bytes"
	"io"

	"aead.dev/minisign"
)

type keyEnv struct{ priv minisign.PrivateKey }

func newKeyEnv() keyEnv {
	_, priv, _ := minisign.GenerateKey(nil)
	return keyEnv{priv}
}

func (k keyEnv) sign(data []byte) []byte {
	r := minisign.NewReader(bytes.NewReader(data))
	io.Copy(io.Discard, r)
	return r.Sign(k.priv)
}
