//go:build linux

package main

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"time"

	"github.com/myriarch/myriarch/internal/testcert"
)

// writeServerCert makes a self-signed certificate for 127.0.0.1 (for
// -transport wss), writes it and its key under dir, and returns the files
// and a client configuration that trusts it.
func writeServerCert(dir string) (certFile, keyFile string, client *tls.Config, err error) {
	c, err := testcert.Loopback(24 * time.Hour)
	if err != nil {
		return "", "", nil, err
	}
	certFile, keyFile = filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")
	if err := os.WriteFile(certFile, c.CertPEM, 0o644); err != nil {
		return "", "", nil, err
	}
	if err := os.WriteFile(keyFile, c.KeyPEM, 0o600); err != nil {
		return "", "", nil, err
	}
	return certFile, keyFile, &tls.Config{RootCAs: c.Pool, MinVersion: tls.VersionTLS12}, nil
}
