package download

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/blake2b"
)

func payload(t testing.TB, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// fastOpts keeps retries quick and deterministic enough for unit tests.
func fastOpts() Options {
	return Options{
		Attempts:         3,
		BackoffBase:      5 * time.Millisecond,
		BackoffMax:       20 * time.Millisecond,
		IdleTimeout:      2 * time.Second,
		LowSpeedTime:     2 * time.Second,
		ProgressInterval: 50 * time.Millisecond,
		FreeSpace:        func(string) (uint64, error) { return 1 << 40, nil },
	}
}

func fetch(t *testing.T, o Options, url string, mod func(*Request)) (Result, string, error) {
	t.Helper()
	f, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(t.TempDir(), "artifact")
	req := Request{URL: url, Dest: dest, Prehash: true}
	if mod != nil {
		mod(&req)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := f.Fetch(ctx, req)
	return res, dest, err
}

func TestFetchOK(t *testing.T) {
	data := payload(t, 3<<20+17)
	var gotHeader atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotHeader.Store(r.Header.Get("Authorization"))
		http.ServeContent(w, r, "a", time.Time{}, bytes.NewReader(data))
	}))
	defer srv.Close()
	var mu sync.Mutex
	var progress []Progress
	res, dest, err := fetch(t, fastOpts(), srv.URL, func(r *Request) {
		r.Header = http.Header{"Authorization": {"Bearer x"}}
		r.Progress = func(p Progress) { mu.Lock(); progress = append(progress, p); mu.Unlock() }
	})
	if err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256(data)
	wantB2 := blake2b.Sum512(data)
	if !bytes.Equal(res.SHA256, want[:]) || !bytes.Equal(res.BLAKE2b512, wantB2[:]) || res.Size != int64(len(data)) {
		t.Fatalf("result %x size %d", res.SHA256, res.Size)
	}
	got, _ := os.ReadFile(dest)
	if !bytes.Equal(got, data) {
		t.Fatal("file content differs")
	}
	if gotHeader.Load() != "Bearer x" {
		t.Fatalf("offer header not sent: %v", gotHeader.Load())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(progress) == 0 || progress[len(progress)-1].Percent != 100 {
		t.Fatalf("final progress missing: %+v", progress)
	}
}

// TestFetchResume: the server breaks the first connection half way; the
// second attempt must ask for the rest with Range and the hash must cover
// the whole file.
func TestFetchResume(t *testing.T) {
	data := payload(t, 2<<20)
	var calls atomic.Int32
	var ranges []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ranges = append(ranges, r.Header.Get("Range"))
		mu.Unlock()
		w.Header().Set("ETag", `"v1"`)
		if calls.Add(1) == 1 {
			w.Header().Set("Content-Length", strconv.Itoa(len(data)))
			w.Write(data[:len(data)/2])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}
		http.ServeContent(w, r, "a", time.Time{}, bytes.NewReader(data))
	}))
	defer srv.Close()
	res, _, err := fetch(t, fastOpts(), srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256(data)
	if !bytes.Equal(res.SHA256, want[:]) || res.Attempts != 2 {
		t.Fatalf("sha %x attempts %d", res.SHA256, res.Attempts)
	}
	mu.Lock()
	defer mu.Unlock()
	if ranges[0] != "" || !strings.HasPrefix(ranges[1], "bytes=") || ranges[1] == "bytes=0-" {
		t.Fatalf("ranges %q", ranges)
	}
}

// TestFetchRangeIgnored: a server that answers a resume with 200 restarts
// the file and the hash from zero.
func TestFetchRangeIgnored(t *testing.T) {
	data := payload(t, 1<<20)
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		if calls.Add(1) == 1 {
			w.Write(data[:len(data)/3])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}
		w.Write(data)
	}))
	defer srv.Close()
	res, dest, err := fetch(t, fastOpts(), srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256(data)
	got, _ := os.ReadFile(dest)
	if !bytes.Equal(res.SHA256, want[:]) || !bytes.Equal(got, data) {
		t.Fatal("restart from zero produced a wrong file or hash")
	}
}

func TestFetchFailures(t *testing.T) {
	data := payload(t, 256<<10)
	cases := []struct {
		name         string
		handler      http.HandlerFunc
		opts         func(*Options)
		wantErr      error
		wantContains string
		wantCalls    int32 // 0: don't check
	}{
		{
			name:         "404 is permanent",
			handler:      func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) },
			wantContains: "404",
			wantCalls:    1,
		},
		{
			name:         "500 is retried then given up",
			handler:      func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", 500) },
			wantContains: "gave up after 3 attempt(s): HTTP status 500",
			wantCalls:    3,
		},
		{
			name: "redirect loop",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "/loop", http.StatusFound)
			},
			wantErr:   ErrTooManyRedirects,
			wantCalls: DefaultMaxRedirects,
		},
		{
			name: "truncated download (server closes mid-stream every time)",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", strconv.Itoa(len(data)))
				w.Write(data[:1000])
				w.(http.Flusher).Flush()
				panic(http.ErrAbortHandler)
			},
			wantContains: "gave up after 3 attempt(s)",
			wantCalls:    3,
		},
		{
			name: "short body with a clean close",
			handler: func(w http.ResponseWriter, r *http.Request) {
				hj, _, _ := w.(http.Hijacker).Hijack()
				fmt.Fprintf(hj, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", len(data))
				hj.Write(data[:100])
				hj.Close()
			},
			wantContains: "gave up after 3 attempt(s)",
		},
		{
			name: "oversize by Content-Length",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.ServeContent(w, r, "a", time.Time{}, bytes.NewReader(data))
			},
			opts:      func(o *Options) { o.MaxSize = 1000 },
			wantErr:   ErrTooLarge,
			wantCalls: 1,
		},
		{
			name: "oversize while streaming (no Content-Length)",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.(http.Flusher).Flush() // chunked: no Content-Length
				w.Write(data)
			},
			opts:      func(o *Options) { o.MaxSize = 1000 },
			wantErr:   ErrTooLarge,
			wantCalls: 1,
		},
		{
			name: "disk space pre-check",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.ServeContent(w, r, "a", time.Time{}, bytes.NewReader(data))
			},
			opts: func(o *Options) {
				o.FreeSpace = func(string) (uint64, error) { return uint64(2 * len(data)), nil }
			},
			wantErr:   ErrNoSpace,
			wantCalls: 1,
		},
		{
			name: "disk fills up mid-download",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.ServeContent(w, r, "a", time.Time{}, bytes.NewReader(data))
			},
			opts: func(o *Options) {
				o.WrapWriter = func(w io.Writer) io.Writer { return &fullDisk{w: w, left: 10000} }
			},
			wantErr:   syscall.ENOSPC,
			wantCalls: 1,
		},
		{
			name: "slow drip",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", strconv.Itoa(len(data)))
				for i := 0; i < 100; i++ {
					if _, err := w.Write(data[i : i+1]); err != nil {
						return
					}
					w.(http.Flusher).Flush()
					select {
					case <-r.Context().Done():
						return
					case <-time.After(50 * time.Millisecond):
					}
				}
			},
			opts: func(o *Options) {
				o.Attempts = 1
				o.LowSpeedTime = 300 * time.Millisecond
				o.LowSpeedLimit = 1000
			},
			wantErr: ErrStalled,
		},
		{
			name: "silent server (idle timeout)",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", strconv.Itoa(len(data)))
				w.(http.Flusher).Flush()
				<-r.Context().Done()
			},
			opts:    func(o *Options) { o.Attempts = 1; o.IdleTimeout = 200 * time.Millisecond },
			wantErr: ErrStalled,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				tc.handler(w, r)
			}))
			defer srv.Close()
			o := fastOpts()
			if tc.opts != nil {
				tc.opts(&o)
			}
			_, dest, err := fetch(t, o, srv.URL, nil)
			if err == nil {
				t.Fatal("want an error")
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if tc.wantContains != "" && !strings.Contains(err.Error(), tc.wantContains) {
				t.Fatalf("error %q does not contain %q", err, tc.wantContains)
			}
			if tc.wantCalls != 0 && calls.Load() != tc.wantCalls {
				t.Fatalf("%d requests, want %d (err %v)", calls.Load(), tc.wantCalls, err)
			}
			if _, serr := os.Stat(dest); !os.IsNotExist(serr) {
				t.Fatalf("partial file left behind: %v", serr)
			}
		})
	}
}

type fullDisk struct {
	w    io.Writer
	left int
}

func (f *fullDisk) Write(p []byte) (int, error) {
	if len(p) > f.left {
		n, _ := f.w.Write(p[:f.left])
		f.left = 0
		return n, &os.PathError{Op: "write", Path: "artifact", Err: syscall.ENOSPC}
	}
	f.left -= len(p)
	return f.w.Write(p)
}

func TestBackoffBounds(t *testing.T) {
	for attempt := 1; attempt < 40; attempt++ {
		d := backoff(time.Second, time.Minute, attempt)
		ceil := min(time.Minute, time.Second<<min(attempt-1, 30))
		if d < ceil/2 || d > ceil {
			t.Fatalf("attempt %d: %s outside [%s, %s]", attempt, d, ceil/2, ceil)
		}
	}
}

func TestParseContentRange(t *testing.T) {
	for _, tc := range []struct {
		in           string
		start, total int64
		ok           bool
	}{
		{"bytes 10-99/100", 10, 100, true},
		{"bytes 10-99/*", 10, -1, true},
		{"bytes x-99/100", 0, 0, false},
		{"items 0-1/2", 0, 0, false},
		{"", 0, 0, false},
	} {
		s, tot, ok := parseContentRange(tc.in)
		if s != tc.start || tot != tc.total || ok != tc.ok {
			t.Errorf("%q: got %d %d %v", tc.in, s, tot, ok)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	err := Options{MaxSize: -1, Attempts: -2, ProgressInterval: 10 * time.Second}.Validate()
	for _, want := range []string{"download.max_size", "download.attempts", "download.progress_interval"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want mention of %s", err, want)
		}
	}
	if err := (Options{}).Validate(); err != nil {
		t.Fatal(err)
	}
}
