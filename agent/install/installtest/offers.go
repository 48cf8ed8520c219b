package installtest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/install"
	"github.com/myriarch/myriarch/agent/verify"
)

// genericBadOffers are the bad offers every back-end must refuse: bad
// offers, bad signatures, bad servers, bad disks, all on the download path.
func genericBadOffers(f *Fixture) []BadOffer {
	good := func(t testing.TB, s Site) []byte { _, v := s.Versions(); return s.Artifact(t, v, false) }
	offerOf := func(t testing.TB, s Site, url string, data, sig []byte) *protobufs.PackagesAvailable {
		_, v := s.Versions()
		return Offer(f.Package, f.Type, v, url, data, sig)
	}
	signed := func(t testing.TB, s Site, path string) *protobufs.PackagesAvailable {
		data := good(t, s)
		return offerOf(t, s, s.Server().Serve(path, data), data, s.Server().Sign(data))
	}
	serveWith := func(path string, h func(data []byte) http.HandlerFunc) func(t testing.TB, s Site) *protobufs.PackagesAvailable {
		return func(t testing.TB, s Site) *protobufs.PackagesAvailable {
			data := good(t, s)
			return offerOf(t, s, s.Server().Handle(path, h(data)), data, s.Server().Sign(data))
		}
	}
	otherType := protobufs.PackageType_PackageType_TopLevel
	wantType := "must be an Addon"
	if f.Type == protobufs.PackageType_PackageType_TopLevel {
		otherType, wantType = protobufs.PackageType_PackageType_Addon, "must be a TopLevel package"
	}
	return []BadOffer{
		{Name: "wrong SHA-256", Want: "content hash mismatch", Quarantine: Blocked, Offer: func(t testing.TB, s Site) *protobufs.PackagesAvailable {
			o := signed(t, s, "/wrong-hash")
			o.Packages[f.Package].File.ContentHash = bytes.Repeat([]byte{1}, 32)
			return o
		}},
		{Name: "unsigned", Want: "unsigned package", Offer: func(t testing.TB, s Site) *protobufs.PackagesAvailable {
			data := good(t, s)
			return offerOf(t, s, s.Server().Serve("/unsigned", data), data, nil)
		}},
		{Name: "malformed signature", Want: "malformed minisign signature", Quarantine: Blocked, Offer: func(t testing.TB, s Site) *protobufs.PackagesAvailable {
			data := good(t, s)
			return offerOf(t, s, s.Server().Serve("/malformed", data), data, []byte("untrusted comment: x\nRWQgarbage\n"))
		}},
		{Name: "signature of other content", Want: "signature does not verify", Quarantine: Blocked, Offer: func(t testing.TB, s Site) *protobufs.PackagesAvailable {
			data := good(t, s)
			return offerOf(t, s, s.Server().Serve("/other-sig", data), data, s.Server().Sign([]byte("other")))
		}},
		{Name: "untrusted key", Want: "signature key is not trusted", Quarantine: Blocked, Offer: func(t testing.TB, s Site) *protobufs.PackagesAvailable {
			data := good(t, s)
			return offerOf(t, s, s.Server().Serve("/untrusted", data), data, s.Server().SignUntrusted(data))
		}},
		{Name: "signed by an expired key", Want: "signature key is not valid now", Quarantine: Blocked,
			Options: keysValid(time.Time{}, time.Now().Add(-time.Hour)), Offer: func(t testing.TB, s Site) *protobufs.PackagesAvailable {
				return signed(t, s, "/expired-key")
			}},
		{Name: "signed by a key not valid yet", Want: "signature key is not valid now", Quarantine: Blocked,
			Options: keysValid(time.Now().Add(time.Hour), time.Time{}), Offer: func(t testing.TB, s Site) *protobufs.PackagesAvailable {
				return signed(t, s, "/future-key")
			}},
		{Name: "404", Want: "404", Quarantine: Delayed, Offer: func(t testing.TB, s Site) *protobufs.PackagesAvailable {
			data := good(t, s)
			return offerOf(t, s, s.Server().URL()+"/missing", data, s.Server().Sign(data))
		}},
		{Name: "500", Want: "HTTP status 500", Quarantine: Delayed, Offer: serveWith("/500", func([]byte) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", 500) }
		})},
		{Name: "truncated download", Want: "truncated: connection closed at 1000 of", Quarantine: Delayed, Offer: serveWith("/truncated", func(data []byte) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				hj, _, _ := w.(http.Hijacker).Hijack()
				fmt.Fprintf(hj, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", len(data))
				hj.Write(data[:1000])
				hj.Close()
			}
		})},
		{Name: "server closing mid-stream", Want: "gave up after 3 attempt(s)", Quarantine: Delayed,
			Options: func(o *install.Options) { o.Download.Attempts = 3 },
			Offer: serveWith("/aborts", func(data []byte) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Length", strconv.Itoa(len(data)))
					w.Write(data[:4096])
					w.(http.Flusher).Flush()
					panic(http.ErrAbortHandler)
				}
			})},
		{Name: "redirect loop", Want: "too many redirects", Quarantine: Delayed, Offer: serveWith("/loop", func([]byte) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, r.URL.Path, http.StatusFound) }
		})},
		{Name: "slow-drip server", Want: "download stalled", Quarantine: Delayed,
			Options: func(o *install.Options) {
				o.Download.Attempts = 1
				o.Download.LowSpeedTime = 300 * time.Millisecond
				o.Download.LowSpeedLimit = 10000
			},
			Offer: serveWith("/drip", func(data []byte) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Length", strconv.Itoa(len(data)))
					for i := 0; i < 200; i++ {
						if _, err := w.Write(data[i : i+1]); err != nil {
							return
						}
						w.(http.Flusher).Flush()
						select {
						case <-r.Context().Done():
							return
						case <-time.After(20 * time.Millisecond):
						}
					}
				}
			})},
		{Name: "oversize", Want: "exceeds the size cap", Quarantine: Blocked,
			Options: func(o *install.Options) { o.MaxPackageSize = 1 << 20 },
			Offer: func(t testing.TB, s Site) *protobufs.PackagesAvailable {
				o := signed(t, s, "/oversize")
				if len(good(t, s)) <= 1<<20 {
					t.Fatalf("the artifact (%d bytes) is not larger than the 1 MiB cap of this case", len(good(t, s)))
				}
				return o
			}},
		{Name: "disk full (free-space pre-check)", Want: "not enough free disk space", Quarantine: Delayed,
			Options: func(o *install.Options) {
				o.Download.FreeSpace = func(string) (uint64, error) { return 1 << 10, nil }
			},
			Offer: func(t testing.TB, s Site) *protobufs.PackagesAvailable { return signed(t, s, "/full") }},
		{Name: "disk full (ENOSPC while writing)", Want: "no space left on device", Quarantine: Delayed,
			Options: func(o *install.Options) {
				o.Download.WrapWriter = func(w io.Writer) io.Writer { return &enospcWriter{w: w, left: 100000} }
			},
			Offer: func(t testing.TB, s Site) *protobufs.PackagesAvailable { return signed(t, s, "/enospc") }},
		{Name: "downgrade", Want: "downgrade from", Offer: func(t testing.TB, s Site) *protobufs.PackagesAvailable {
			data := s.Artifact(t, "0.0.1", false)
			return Offer(f.Package, f.Type, "0.0.1", s.Server().Serve("/downgrade", data), data, s.Server().Sign(data))
		}},
		{Name: "unparsable version", Want: "unparsable version", Offer: func(t testing.TB, s Site) *protobufs.PackagesAvailable {
			data := good(t, s)
			return Offer(f.Package, f.Type, "latest/../x", s.Server().Serve("/unparsable", data), data, s.Server().Sign(data))
		}},
		{Name: "no download URL", Want: "has no file.download_url", Offer: func(t testing.TB, s Site) *protobufs.PackagesAvailable {
			data := good(t, s)
			return offerOf(t, s, "", data, s.Server().Sign(data))
		}},
		{Name: "content hash not SHA-256", Want: "32-byte SHA-256", Offer: func(t testing.TB, s Site) *protobufs.PackagesAvailable {
			o := signed(t, s, "/short-hash")
			o.Packages[f.Package].File.ContentHash = []byte{1, 2, 3}
			return o
		}},
		{Name: "unknown package name", Want: `unknown package "nginx"`, Offer: func(t testing.TB, s Site) *protobufs.PackagesAvailable {
			data := good(t, s)
			return Offer("nginx", protobufs.PackageType_PackageType_Addon, "1.0.0", s.Server().Serve("/nginx", data), data, s.Server().Sign(data))
		}},
		{Name: "wrong package type", Want: wantType, Offer: func(t testing.TB, s Site) *protobufs.PackagesAvailable {
			o := signed(t, s, "/wrong-type")
			o.Packages[f.Package].Type = otherType
			return o
		}},
	}
}

// enospcWriter fails with ENOSPC once left bytes are written.
type enospcWriter struct {
	w    io.Writer
	left int
}

func (f *enospcWriter) Write(p []byte) (int, error) {
	if len(p) > f.left {
		n, _ := f.w.Write(p[:f.left])
		f.left = 0
		return n, &os.PathError{Op: "write", Path: "artifact", Err: syscall.ENOSPC}
	}
	f.left -= len(p)
	return f.w.Write(p)
}

// keysValid makes the site's pinned keys valid only from notBefore until
// notAfter (trust.minisign_keys).
func keysValid(notBefore, notAfter time.Time) func(o *install.Options) {
	return func(o *install.Options) {
		for _, k := range o.MinisignPublicKeys {
			o.MinisignKeys = append(o.MinisignKeys, verify.KeySpec{Text: k, NotBefore: notBefore, NotAfter: notAfter})
		}
		o.MinisignPublicKeys = nil
	}
}
