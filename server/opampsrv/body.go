package opampsrv

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// A plain-HTTP body is read within BodyTimeout in all; no single read may
// wait longer than bodyStall, and after bodyGrace the body must have
// arrived at MinBodyRate on average. So a peer that trickles its body, or
// stops half-way, holds its connection for seconds, not minutes.
const (
	bodyStall = 10 * time.Second
	bodyGrace = 5 * time.Second
)

// slowBodyError is a body that broke the time bounds.
type slowBodyError struct{ why string }

func (e *slowBodyError) Error() string { return "request body too slow: " + e.why }

// timedBody enforces the time bounds on one request body through the
// connection's read deadline.
type timedBody struct {
	r        io.ReadCloser
	rc       *http.ResponseController
	start    time.Time
	deadline time.Time
	minRate  int64
	n        int64
}

func newTimedBody(r io.ReadCloser, rc *http.ResponseController, timeout time.Duration, minRate int64) *timedBody {
	now := time.Now()
	return &timedBody{r: r, rc: rc, start: now, deadline: now.Add(timeout), minRate: minRate}
}

func (b *timedBody) Read(p []byte) (int, error) {
	now := time.Now()
	if el := now.Sub(b.start); b.minRate > 0 && el > bodyGrace {
		if rate := float64(b.n) / el.Seconds(); rate < float64(b.minRate) {
			return 0, &slowBodyError{fmt.Sprintf("%.0f bytes/s, below the minimum of %d", rate, b.minRate)}
		}
	}
	d := now.Add(bodyStall)
	if b.deadline.Before(d) {
		d = b.deadline
	}
	_ = b.rc.SetReadDeadline(d)
	n, err := b.r.Read(p)
	b.n += int64(n)
	var ne net.Error
	if err != nil && errors.As(err, &ne) && ne.Timeout() {
		if time.Now().Before(b.deadline) {
			return n, &slowBodyError{fmt.Sprintf("nothing received for %s", bodyStall)}
		}
		return n, &slowBodyError{fmt.Sprintf("not complete within %s", b.deadline.Sub(b.start).Round(time.Second))}
	}
	return n, err
}

func (b *timedBody) Close() error { return b.r.Close() }

// done lifts the read deadline once the body is read.
func (b *timedBody) done() { _ = b.rc.SetReadDeadline(time.Time{}) }
