package updater

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"
	"github.com/open-telemetry/opamp-go/server"
	"github.com/open-telemetry/opamp-go/server/types"
)

type testPKI struct {
	caPEM      []byte
	serverCert tls.Certificate
	clientCert string // PEM file
	clientKey  string // PEM file
	pool       *x509.CertPool
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	caKey := key()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	issue := func(serial int64, cn string, usage x509.ExtKeyUsage, ips []net.IP) ([]byte, []byte) {
		k := key()
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: ips, KeyUsage: x509.KeyUsageDigitalSignature,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kd, _ := x509.MarshalECPrivateKey(k)
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd})
	}
	p := &testPKI{caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), pool: x509.NewCertPool()}
	p.pool.AddCert(ca)
	sc, sk := issue(2, "127.0.0.1", x509.ExtKeyUsageServerAuth, []net.IP{net.ParseIP("127.0.0.1")})
	if p.serverCert, err = tls.X509KeyPair(sc, sk); err != nil {
		t.Fatal(err)
	}
	cc, ck := issue(3, "updater-1", x509.ExtKeyUsageClientAuth, nil)
	dir := t.TempDir()
	p.clientCert, p.clientKey = filepath.Join(dir, "client.pem"), filepath.Join(dir, "client.key")
	if err := os.WriteFile(p.clientCert, cc, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.clientKey, ck, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestMutualTLS connects over wss to a server that only trusts our test CA
// and requires a client certificate: ca_file, cert_file and key_file work.
func TestMutualTLS(t *testing.T) {
	pki := newTestPKI(t)
	clientCN := make(chan string, 4)
	srv := server.New(nil)
	err := srv.Start(server.StartSettings{
		ListenEndpoint: "127.0.0.1:0",
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{pki.serverCert},
			ClientAuth:   tls.RequireAndVerifyClientCert,
			ClientCAs:    pki.pool,
			MinVersion:   tls.VersionTLS12,
		},
		Settings: server.Settings{Callbacks: types.Callbacks{
			OnConnecting: func(r *http.Request) types.ConnectionResponse {
				if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
					clientCN <- r.TLS.PeerCertificates[0].Subject.CommonName
				}
				return types.ConnectionResponse{Accept: true, ConnectionCallbacks: types.ConnectionCallbacks{
					OnMessage: func(_ context.Context, _ types.Connection, m *protobufs.AgentToServer) *protobufs.ServerToAgent {
						return &protobufs.ServerToAgent{InstanceUid: m.InstanceUid}
					},
				}}
			},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })

	cfg := testConfig(t, fmt.Sprintf("wss://%s/v1/opamp", srv.Addr()))
	cfg.Server.Token = ""
	cfg.Server.TLS.CAFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(cfg.Server.TLS.CAFile, pki.caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.Server.TLS.CertFile, cfg.Server.TLS.KeyFile = pki.clientCert, pki.clientKey
	runUpdater(t, newUpdater(t, cfg))
	select {
	case cn := <-clientCN:
		if cn != "updater-1" {
			t.Errorf("client certificate CN = %q", cn)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no mTLS connection")
	}
}

func TestTLSConfigErrors(t *testing.T) {
	cfg := testConfig(t, "wss://127.0.0.1:1/v1/opamp")
	cfg.Server.TLS.CAFile = filepath.Join(t.TempDir(), "empty.pem")
	if err := os.WriteFile(cfg.Server.TLS.CAFile, []byte("not pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := tlsConfig(cfg.Server, "wss"); err == nil {
		t.Error("CA file without certificates accepted")
	}
	if tc, err := tlsConfig(cfg.Server, "ws"); tc != nil || err != nil {
		t.Errorf("ws endpoint got TLS config %v, %v", tc, err)
	}
}
