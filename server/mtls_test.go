package server_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/client"
	"github.com/open-telemetry/opamp-go/client/types"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/admin"
)

type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newCA(t *testing.T) *testCA {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "myriarch test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

func (ca *testCA) issue(t *testing.T, subject pkix.Name, server bool) (certPEM, keyPEM []byte) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: subject,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}

func TestMutualTLSCredential(t *testing.T) {
	dir := t.TempDir()
	ca := newCA(t)
	srvCert, srvKey := ca.issue(t, pkix.Name{CommonName: "myriarchd"}, true)
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ts := startServer(t, func(o *server.Options) {
		o.TLSCert, o.TLSKey, o.ClientCA = write("srv.crt", srvCert), write("srv.key", srvKey), write("ca.crt", ca.pem)
	})
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.pem)
	cliCert, cliKey := ca.issue(t, pkix.Name{CommonName: "host-17", Organization: []string{"edge"}}, false)
	pair, err := tls.X509KeyPair(cliCert, cliKey)
	if err != nil {
		t.Fatal(err)
	}

	// No token and no certificate over TLS: 401.
	plain := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	resp, err := plain.Get("https://" + ts.OpAMPAddr().String() + "/v1/opamp")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	mustEqual(t, "no credential over TLS", resp.StatusCode, http.StatusUnauthorized)

	uid := newUID(t)
	c := client.NewWebSocket(nopLogger{})
	c.SetAgentDescription(&protobufs.AgentDescription{IdentifyingAttributes: kvs("service.name", "otelcol")})
	c.SetHealth(&protobufs.ComponentHealth{Healthy: true})
	if err := c.Start(context.Background(), types.StartSettings{
		OpAMPServerURL: ts.OpAMPURL(),
		InstanceUid:    types.InstanceUid(uid),
		Capabilities:   baseCaps,
		TLSConfig:      &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{pair}},
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop(context.Background()) })
	if ts.OpAMPURL()[:6] != "wss://" {
		t.Fatalf("OpAMP URL %s is not wss", ts.OpAMPURL())
	}
	a := ts.waitAgent(uid, "certificate credential", func(a admin.Agent) bool { return a.Online })
	mustEqual(t, "credential.kind", a.Credential.Kind, "certificate")
	mustEqual(t, "credential.id", a.Credential.ID, "CN=host-17,O=edge")

	// A token over TLS is still a token credential.
	tok := ts.createToken("tls-token", nil)
	u2 := uuid.Must(uuid.NewV7())
	c2 := client.NewWebSocket(nopLogger{})
	c2.SetAgentDescription(&protobufs.AgentDescription{IdentifyingAttributes: kvs("service.name", "otelcol")})
	c2.SetHealth(&protobufs.ComponentHealth{Healthy: true})
	if err := c2.Start(context.Background(), types.StartSettings{
		OpAMPServerURL: ts.OpAMPURL(), InstanceUid: types.InstanceUid(u2), Capabilities: baseCaps,
		Header:    http.Header{"Authorization": []string{"Bearer " + tok.Token}},
		TLSConfig: &tls.Config{RootCAs: roots},
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c2.Stop(context.Background()) })
	a2 := ts.waitAgent(u2, "token credential over TLS", func(a admin.Agent) bool { return a.Online })
	mustEqual(t, "credential.kind", a2.Credential.Kind, "token")
}
