package download

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/blake2b"
)

// Progress is a snapshot of a running download.
type Progress struct {
	Bytes int64 // bytes on disk so far
	Total int64 // expected size, -1 when the server did not say
	// Percent is 0..100, or -1 when Total is unknown.
	Percent float64
	// BytesPerSecond over the last progress interval.
	BytesPerSecond float64
}

// Request describes one artifact to fetch.
type Request struct {
	URL string
	// Header is sent with every attempt (the offer's headers).
	Header http.Header
	// Dest is the file to write (created or truncated, mode 0600).
	Dest string
	// Prehash also computes BLAKE2b-512 of the content, the digest a
	// pre-hashed minisign signature signs.
	Prehash bool
	// Progress, when set, is called at least every Options.ProgressInterval
	// while the download runs, and once at the end, never concurrently. It
	// must not block long.
	Progress func(Progress)
}

// Result describes a completed download. The file at Request.Dest holds
// exactly Size bytes, fsync'ed.
type Result struct {
	Size       int64
	SHA256     []byte
	BLAKE2b512 []byte // only with Request.Prehash
	Attempts   int
}

// Fetcher downloads artifacts.
//
// Fetch returns only when the whole content is on disk and fsync'ed (nil
// error), or when it gave up: a permanent failure (4xx other than 408/429,
// ErrTooLarge, ErrNoSpace, ErrTooManyRedirects, a local write error) or
// Options.Attempts attempts spent, or ctx done. On failure the partial file
// is removed. Fetch is safe for concurrent use with different Dest.
type Fetcher interface {
	Fetch(ctx context.Context, req Request) (Result, error)
}

// New returns a Fetcher with opts (zero fields take defaults).
func New(opts Options) (Fetcher, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	o := opts.withDefaults()
	tr := o.Transport
	if tr == nil {
		tr = &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: o.ConnectTimeout, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   o.ConnectTimeout,
			ResponseHeaderTimeout: o.IdleTimeout,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          4,
			IdleConnTimeout:       30 * time.Second,
			// Compression would make byte counts and Range offsets refer to
			// the encoded stream; artifacts are compressed already.
			DisableCompression: true,
		}
	}
	client := &http.Client{Transport: tr, CheckRedirect: checkRedirect(o)}
	return &fetcher{o: o, client: client}, nil
}

type fetcher struct {
	o      Options
	client *http.Client
}

var _ Fetcher = (*fetcher)(nil)

// transfer is the state of one Fetch across attempts.
type transfer struct {
	req      Request
	f        *os.File
	w        io.Writer
	pipe     *hashPipe
	sha      hash.Hash
	b2       hash.Hash
	written  atomic.Int64
	total    atomic.Int64
	lastRead atomic.Int64 // unix nanos
	validtor string       // If-Range validator from the first response
	checked  bool         // disk space checked
}

func (d *fetcher) Fetch(ctx context.Context, req Request) (res Result, err error) {
	if req.URL == "" {
		return res, permanent(errors.New("download: empty URL"))
	}
	f, err := os.OpenFile(req.Dest, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return res, fmt.Errorf("download: create %s: %w", req.Dest, err)
	}
	defer func() {
		if f != nil {
			f.Close()
		}
		if err != nil {
			os.Remove(req.Dest)
		}
	}()
	t := &transfer{req: req, f: f, w: f, sha: sha256.New()}
	if d.o.WrapWriter != nil {
		t.w = d.o.WrapWriter(f)
	}
	hashes := []hash.Hash{t.sha}
	if req.Prehash {
		t.b2, _ = blake2b.New512(nil)
		hashes = append(hashes, t.b2)
	}
	t.pipe = newHashPipe(hashes...)
	t.total.Store(-1)
	defer func() { t.pipe.close() }()

	wctx, stopWatch := context.WithCancel(ctx)
	var cancelAttempt atomic.Pointer[context.CancelCauseFunc]
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		d.watch(wctx, t, &cancelAttempt)
	}()
	var stopOnce sync.Once
	stop := func() {
		stopOnce.Do(func() {
			stopWatch()
			<-watchDone
		})
	}
	defer stop()

	var lastErr error
	for attempt := 1; ; attempt++ {
		res.Attempts = attempt
		actx, cancel := context.WithCancelCause(ctx)
		cancelAttempt.Store(&cancel)
		t.lastRead.Store(time.Now().UnixNano())
		lastErr = d.attempt(actx, t)
		cancel(nil)
		if lastErr == nil {
			break
		}
		if ctx.Err() != nil {
			return res, fmt.Errorf("download %s: %w", req.URL, errors.Join(lastErr, context.Cause(ctx)))
		}
		if isPermanent(lastErr) || attempt >= d.o.Attempts {
			return res, fmt.Errorf("download %s: gave up after %d attempt(s): %w", redact(req.URL), attempt, lastErr)
		}
		delay := backoff(d.o.BackoffBase, d.o.BackoffMax, attempt)
		d.o.Logger.Warn("download attempt failed, retrying",
			"url", redact(req.URL), "attempt", attempt, "bytes", t.written.Load(), "retry_in", delay, "err", lastErr)
		select {
		case <-ctx.Done():
			return res, fmt.Errorf("download %s: %w", redact(req.URL), context.Cause(ctx))
		case <-time.After(delay):
		}
	}
	t.pipe.close()
	if err := f.Sync(); err != nil {
		return res, fmt.Errorf("download: fsync %s: %w", req.Dest, err)
	}
	if err := f.Close(); err != nil {
		f = nil
		return res, fmt.Errorf("download: close %s: %w", req.Dest, err)
	}
	f = nil
	if err := syncDir(filepath.Dir(req.Dest)); err != nil {
		return res, err
	}
	res.Size = t.written.Load()
	res.SHA256 = t.sha.Sum(nil)
	if t.b2 != nil {
		res.BLAKE2b512 = t.b2.Sum(nil)
	}
	stop() // Progress is never called concurrently
	if req.Progress != nil {
		req.Progress(Progress{Bytes: res.Size, Total: res.Size, Percent: 100})
	}
	return res, nil
}

// watch reports progress and cuts stalled attempts.
func (d *fetcher) watch(ctx context.Context, t *transfer, cancel *atomic.Pointer[context.CancelCauseFunc]) {
	tick := min(d.o.ProgressInterval, d.o.IdleTimeout/4, d.o.LowSpeedTime/4, time.Second)
	tick = max(tick, 10*time.Millisecond)
	tk := time.NewTicker(tick)
	defer tk.Stop()
	lastProgress, lastBytes := time.Now(), int64(0)
	winStart, winBytes := time.Now(), int64(0)
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tk.C:
			n := t.written.Load()
			if n < winBytes { // restarted from zero
				winStart, winBytes, lastBytes = now, n, n
			}
			stall := error(nil)
			if idle := now.Sub(time.Unix(0, t.lastRead.Load())); idle > d.o.IdleTimeout {
				stall = fmt.Errorf("%w: no data for %s", ErrStalled, idle.Truncate(time.Millisecond))
			} else if el := now.Sub(winStart); el >= d.o.LowSpeedTime {
				rate := float64(n-winBytes) / el.Seconds()
				if rate < float64(d.o.LowSpeedLimit) {
					stall = fmt.Errorf("%w: %.0f B/s over %s, below the %d B/s floor", ErrStalled, rate, el.Truncate(time.Millisecond), d.o.LowSpeedLimit)
				}
				winStart, winBytes = now, n
			}
			if stall != nil {
				if c := cancel.Load(); c != nil {
					(*c)(stall)
				}
				winStart, winBytes = now, n
				t.lastRead.Store(now.UnixNano())
			}
			if t.req.Progress != nil && now.Sub(lastProgress) >= d.o.ProgressInterval {
				total := t.total.Load()
				p := Progress{Bytes: n, Total: total, Percent: -1,
					BytesPerSecond: float64(n-lastBytes) / now.Sub(lastProgress).Seconds()}
				if total > 0 {
					p.Percent = 100 * float64(n) / float64(total)
				}
				t.req.Progress(p)
				lastProgress, lastBytes = now, n
			}
		}
	}
}

func (d *fetcher) attempt(ctx context.Context, t *transfer) error {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, t.req.URL, nil)
	if err != nil {
		return permanent(fmt.Errorf("bad URL: %w", err))
	}
	for k, vs := range t.req.Header {
		for _, v := range vs {
			hreq.Header.Add(k, v)
		}
	}
	offset := t.written.Load()
	if offset > 0 {
		hreq.Header.Set("Range", fmt.Sprintf("bytes=%d-", offset))
		if t.validtor != "" {
			hreq.Header.Set("If-Range", t.validtor)
		}
	}
	if err := allowHost(d.o.AllowedHosts, hreq.URL); err != nil {
		return permanent(err)
	}
	resp, err := d.client.Do(hreq)
	if err != nil {
		if errors.Is(err, ErrTooManyRedirects) || errors.Is(err, ErrHostNotAllowed) {
			return permanent(err)
		}
		return withCause(ctx, err)
	}
	defer resp.Body.Close()

	switch {
	case resp.StatusCode == http.StatusOK:
		if offset > 0 {
			d.o.Logger.Info("server ignored the Range request, restarting from zero", "url", redact(t.req.URL))
			if err := t.restart(); err != nil {
				return err
			}
		}
		t.total.Store(resp.ContentLength)
		if etag := resp.Header.Get("ETag"); etag != "" && !strings.HasPrefix(etag, "W/") {
			t.validtor = etag
		} else {
			t.validtor = resp.Header.Get("Last-Modified")
		}
	case resp.StatusCode == http.StatusPartialContent && offset > 0:
		start, total, ok := parseContentRange(resp.Header.Get("Content-Range"))
		if !ok || start != offset {
			if err := t.restart(); err != nil {
				return err
			}
			return fmt.Errorf("resume: unexpected Content-Range %q for offset %d", resp.Header.Get("Content-Range"), offset)
		}
		t.total.Store(total)
		d.o.Logger.Info("download resumed", "url", redact(t.req.URL), "offset", offset)
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable:
		if err := t.restart(); err != nil {
			return err
		}
		return &StatusError{resp.StatusCode, resp.Status}
	default:
		se := &StatusError{resp.StatusCode, resp.Status}
		if retryableStatus(resp.StatusCode) {
			return se
		}
		return permanent(se)
	}

	total := t.total.Load()
	if total > d.o.MaxSize {
		return permanent(fmt.Errorf("%w: server announces %d bytes, cap is %d", ErrTooLarge, total, d.o.MaxSize))
	}
	if !t.checked && total > 0 {
		t.checked = true
		free, err := d.o.FreeSpace(filepath.Dir(t.req.Dest))
		need := uint64(d.o.FreeSpaceFactor) * uint64(total-t.written.Load())
		switch {
		case errors.Is(err, errors.ErrUnsupported):
		case err != nil:
			return permanent(fmt.Errorf("disk space check of %s: %w", filepath.Dir(t.req.Dest), err))
		case free < need:
			return permanent(fmt.Errorf("%w in %s: %d bytes free, need %d (%d× the %d-byte artifact)",
				ErrNoSpace, filepath.Dir(t.req.Dest), free, need, d.o.FreeSpaceFactor, total))
		}
	}
	return d.copy(ctx, t, resp.Body)
}

func (d *fetcher) copy(ctx context.Context, t *transfer, body io.Reader) error {
	for {
		c := t.pipe.get()
		room := d.o.MaxSize + 1 - t.written.Load()
		buf := c.buf
		if int64(len(buf)) > room {
			buf = buf[:room]
		}
		n, rerr := readSome(body, buf, &t.lastRead)
		c.n = n
		if n > 0 {
			if _, err := t.w.Write(buf[:n]); err != nil {
				c.n = 0
				t.pipe.submit(c)
				return permanent(fmt.Errorf("write %s: %w", t.req.Dest, err))
			}
		}
		t.pipe.submit(c)
		w := t.written.Add(int64(n))
		if w > d.o.MaxSize {
			return permanent(fmt.Errorf("%w: more than %d bytes received", ErrTooLarge, d.o.MaxSize))
		}
		if rerr == io.EOF || errors.Is(rerr, io.ErrUnexpectedEOF) {
			if total := t.total.Load(); total >= 0 && w != total {
				return fmt.Errorf("truncated: connection closed at %d of %d bytes", w, total)
			}
			if rerr == io.EOF {
				return nil
			}
		}
		if rerr != nil {
			return withCause(ctx, fmt.Errorf("read body at %d bytes: %w", w, rerr))
		}
	}
}

// readSome fills buf as far as the stream allows without waiting for more
// than one short read, so small trailing chunks are not delayed. It stamps
// lastRead at every byte batch for the idle watchdog.
func readSome(r io.Reader, buf []byte, lastRead *atomic.Int64) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		if m > 0 {
			lastRead.Store(time.Now().UnixNano())
		}
		n += m
		if err != nil {
			return n, err
		}
		if n >= len(buf)/2 {
			return n, nil
		}
	}
	return n, nil
}

func (t *transfer) restart() error {
	t.pipe.reset()
	t.written.Store(0)
	t.total.Store(-1)
	t.validtor = ""
	if err := t.f.Truncate(0); err != nil {
		return permanent(fmt.Errorf("truncate %s: %w", t.req.Dest, err))
	}
	if _, err := t.f.Seek(0, io.SeekStart); err != nil {
		return permanent(fmt.Errorf("seek %s: %w", t.req.Dest, err))
	}
	return nil
}

// withCause replaces a bare "context canceled" by the watchdog's reason.
func withCause(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return fmt.Errorf("%w (%v)", cause, err)
	}
	return err
}

// parseContentRange parses "bytes start-end/total" (total may be "*").
func parseContentRange(s string) (start, total int64, ok bool) {
	rest, found := strings.CutPrefix(s, "bytes ")
	if !found {
		return 0, 0, false
	}
	rng, tot, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, false
	}
	a, _, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, false
	}
	start, err := strconv.ParseInt(a, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	total = -1
	if tot != "*" {
		if total, err = strconv.ParseInt(tot, 10, 64); err != nil {
			return 0, 0, false
		}
	}
	return start, total, true
}

// backoff returns a delay in [d/2, d], d = min(max, base·2^(attempt-1)).
func backoff(base, maxDelay time.Duration, attempt int) time.Duration {
	d := base
	for i := 1; i < attempt && d < maxDelay; i++ {
		d *= 2
	}
	d = min(d, maxDelay)
	return d/2 + rand.N(d/2+1)
}

func redact(raw string) string {
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
		return raw[:i]
	}
	return raw
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("download: open dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, errors.ErrUnsupported) && !isWindows {
		return fmt.Errorf("download: fsync dir %s: %w", dir, err)
	}
	return nil
}
