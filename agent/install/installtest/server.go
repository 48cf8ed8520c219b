package installtest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"aead.dev/minisign"
	"github.com/open-telemetry/opamp-go/protobufs"
)

// Server serves artifacts on 127.0.0.1 and signs them with a key the
// updater trusts (and with one it does not).
type Server struct {
	srv       *httptest.Server
	pub       minisign.PublicKey
	priv      minisign.PrivateKey
	untrusted minisign.PrivateKey

	mu    sync.Mutex
	files map[string]http.HandlerFunc
	hits  map[string]int
}

// NewServer starts a server for the test.
func NewServer(t testing.TB) *Server {
	s := &Server{files: map[string]http.HandlerFunc{}, hits: map[string]int{}}
	var err error
	if s.pub, s.priv, err = minisign.GenerateKey(nil); err != nil {
		t.Fatal(err)
	}
	if _, s.untrusted, err = minisign.GenerateKey(nil); err != nil {
		t.Fatal(err)
	}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		h := s.files[r.URL.Path]
		s.hits[r.URL.Path]++
		s.mu.Unlock()
		if h == nil {
			http.NotFound(w, r)
			return
		}
		h(w, r)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// PublicKey is the trusted key, as trust.minisign_public_keys holds it.
func (s *Server) PublicKey() string { return s.pub.String() }

// URL is the server's base URL.
func (s *Server) URL() string { return s.srv.URL }

// Serve serves data at path and returns its URL.
func (s *Server) Serve(path string, data []byte) string {
	return s.Handle(path, func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "artifact", time.Time{}, bytes.NewReader(data))
	})
}

// Handle serves path with h and returns its URL.
func (s *Server) Handle(path string, h http.HandlerFunc) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[path] = h
	return s.srv.URL + path
}

// Hits counts the requests for path.
func (s *Server) Hits(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

// Sign returns the pre-hashed minisign signature of data with the trusted
// key.
func (s *Server) Sign(data []byte) []byte { return sign(s.priv, data) }

// SignFile signs the file at path with the trusted key, streaming it.
func (s *Server) SignFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := minisign.NewReader(f)
	if _, err := io.Copy(io.Discard, r); err != nil {
		return nil, err
	}
	return r.Sign(s.priv), nil
}

// SignUntrusted signs data with a key the updater does not trust.
func (s *Server) SignUntrusted(data []byte) []byte { return sign(s.untrusted, data) }

func sign(k minisign.PrivateKey, data []byte) []byte {
	r := minisign.NewReader(bytes.NewReader(data))
	io.Copy(io.Discard, r)
	return r.Sign(k)
}

// OfferHashOf is the PackageAvailable.hash offers give content: unlike
// the content hash (as myriarchd's), so a test tells which one a status
// reports.
func OfferHashOf(version string, content []byte) []byte {
	h := sha256.Sum256([]byte("offer " + version + " " + hex.EncodeToString(content)))
	return h[:]
}

// Offer builds a PackagesAvailable with one package.
func Offer(name string, typ protobufs.PackageType, version, url string, data, sig []byte) *protobufs.PackagesAvailable {
	sum := sha256.Sum256(data)
	return &protobufs.PackagesAvailable{
		AllPackagesHash: []byte("all-" + version),
		Packages: map[string]*protobufs.PackageAvailable{name: {
			Type: typ, Version: version, Hash: OfferHashOf(version, sum[:]),
			File: &protobufs.DownloadableFile{DownloadUrl: url, ContentHash: sum[:], Signature: sig},
		}},
	}
}
