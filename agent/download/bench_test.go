package download

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"aead.dev/minisign"

	"github.com/myriarch/myriarch/agent/verify"
	"github.com/myriarch/myriarch/internal/testenv"
)

const benchSize = 256 << 20

// benchServer serves a benchSize random file from disk on 127.0.0.1.
func benchServer(b *testing.B) (*httptest.Server, string) {
	b.Helper()
	dir := b.TempDir()
	path := filepath.Join(dir, "artifact")
	f, _ := os.Create(path)
	r := rand.NewChaCha8([32]byte{1})
	if _, err := io.CopyN(f, r, benchSize); err != nil {
		b.Fatal(err)
	}
	f.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, path)
	}))
	b.Cleanup(srv.Close)
	return srv, path
}

// BenchmarkFetchVerify: download to disk with SHA-256 and BLAKE2b-512 on the
// fly, then the SHA-256 compare and the minisign check from the digest.
func BenchmarkFetchVerify(b *testing.B) {
	srv, path := benchServer(b)
	pub, priv, _ := minisign.GenerateKey(nil)
	f, _ := os.Open(path)
	mr := minisign.NewReader(f)
	io.Copy(io.Discard, mr)
	f.Close()
	sig := mr.Sign(priv)
	fetcher, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	dest := filepath.Join(b.TempDir(), "dl")
	var want []byte
	b.SetBytes(benchSize)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := fetcher.Fetch(context.Background(), Request{URL: srv.URL, Dest: dest, Prehash: true})
		if err != nil {
			b.Fatal(err)
		}
		if want == nil {
			want = res.SHA256
		}
		if err := verify.SHA256(want, res.SHA256); err != nil {
			b.Fatal(err)
		}
		if err := verify.Signature([]verify.Key{{PublicKey: pub}}, time.Now(), sig, verify.Content{BLAKE2b512: res.BLAKE2b512, Path: dest}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFetchSHA256Only: the same without the BLAKE2b pre-hash (offers
// verified by hash only).
func BenchmarkFetchSHA256Only(b *testing.B) {
	srv, _ := benchServer(b)
	fetcher, _ := New(Options{})
	dest := filepath.Join(b.TempDir(), "dl")
	b.SetBytes(benchSize)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := fetcher.Fetch(context.Background(), Request{URL: srv.URL, Dest: dest}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCurlSHA256 is the baseline: `curl -s URL | sha256sum` on the same
// file from the same loopback server (no disk write).
func BenchmarkCurlSHA256(b *testing.B) {
	testenv.Tool(b, "curl", "curl")
	srv, _ := benchServer(b)
	b.SetBytes(benchSize)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out, err := exec.Command("sh", "-c", "curl -s "+srv.URL+" | sha256sum").Output()
		if err != nil || len(bytes.TrimSpace(out)) < 64 {
			b.Fatalf("%v %q", err, out)
		}
	}
}

// BenchmarkVsCurl alternates, in every iteration, curl | sha256sum, our
// SHA-256-only download, and our download + minisign verification on the
// same file, so a shared machine's load hits all three alike; it reports
// each rate and the ratios to curl.
func BenchmarkVsCurl(b *testing.B) {
	testenv.Tool(b, "curl", "curl")
	srv, path := benchServer(b)
	pub, priv, _ := minisign.GenerateKey(nil)
	f, _ := os.Open(path)
	mr := minisign.NewReader(f)
	io.Copy(io.Discard, mr)
	f.Close()
	sig := mr.Sign(priv)
	fetcher, _ := New(Options{})
	dest := filepath.Join(b.TempDir(), "dl")
	var tCurl, tSHA, tVerify time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if out, err := exec.Command("sh", "-c", "curl -s "+srv.URL+" | sha256sum").Output(); err != nil || len(out) < 64 {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := fetcher.Fetch(context.Background(), Request{URL: srv.URL, Dest: dest}); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		res, err := fetcher.Fetch(context.Background(), Request{URL: srv.URL, Dest: dest, Prehash: true})
		if err != nil {
			b.Fatal(err)
		}
		if err := verify.Signature([]verify.Key{{PublicKey: pub}}, time.Now(), sig, verify.Content{BLAKE2b512: res.BLAKE2b512, Path: dest}); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		tCurl += t1.Sub(t0)
		tSHA += t2.Sub(t1)
		tVerify += t3.Sub(t2)
	}
	mb := float64(benchSize) / (1 << 20) * float64(b.N)
	b.ReportMetric(mb/tCurl.Seconds(), "curl-MiB/s")
	b.ReportMetric(mb/tSHA.Seconds(), "sha256-MiB/s")
	b.ReportMetric(mb/tVerify.Seconds(), "minisign-MiB/s")
	b.ReportMetric(tCurl.Seconds()/tSHA.Seconds(), "sha256/curl")
	b.ReportMetric(tCurl.Seconds()/tVerify.Seconds(), "minisign/curl")
}
