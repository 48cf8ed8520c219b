package updater

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/myriarch/myriarch/agent/config"
)

// tlsConfig builds the client TLS settings; nil for ws/http endpoints
// (opamp-go switches a ws URL to wss whenever a TLS config is given).
func tlsConfig(s config.ServerConfig, scheme string) (*tls.Config, error) {
	if scheme != "wss" && scheme != "https" {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: s.TLS.InsecureSkipVerify} //nolint:gosec // operator's explicit choice
	if s.TLS.CAFile != "" {
		pem, err := os.ReadFile(s.TLS.CAFile)
		if err != nil {
			return nil, fmt.Errorf("server.tls.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("server.tls.ca_file: no PEM certificates in %s", s.TLS.CAFile)
		}
		tc.RootCAs = pool
	}
	if s.TLS.CertFile != "" {
		certFile, keyFile := s.TLS.CertFile, s.TLS.KeyFile
		if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
			return nil, fmt.Errorf("server.tls.cert_file/key_file: %w", err)
		}
		// Re-read on every handshake so a renewed certificate is used without a restart.
		tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			c, err := tls.LoadX509KeyPair(certFile, keyFile)
			if err != nil {
				return nil, fmt.Errorf("load client certificate: %w", err)
			}
			return &c, nil
		}
	}
	return tc, nil
}
