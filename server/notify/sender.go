package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/myriarch/myriarch/server/store"
)

// Outbox is the part of the store the Sender uses.
type Outbox interface {
	DueDeliveries(ctx context.Context, now time.Time, limit int) ([]store.Delivery, error)
	SettleDelivery(ctx context.Context, id string, s store.Settlement) error
}

// Hook is where a webhook's bodies go and the secret they are signed with.
type Hook struct {
	URL    string
	Secret []byte
}

// Defaults of the Sender.
const (
	DefaultGiveUpAfter = 24 * time.Hour
	DefaultTimeout     = 10 * time.Second
	DefaultWorkers     = 8
	// maxAnswer bounds what is read of a receiver's answer.
	maxAnswer = 4 << 10
)

// Sender delivers the outbox's due deliveries: each is POSTed, signed, to
// its webhook's URL; a 2xx answer delivers it, anything else (an error
// status, no answer within Timeout, no connection) is retried with
// backoff until GiveUpAfter has passed since it was created. A delivery
// whose webhook is no longer in the estate is given up.
//
// A Sender is used by one goroutine at a time (Send); its attempts run on
// at most Workers goroutines, so a receiver that never answers holds one
// worker for Timeout, never the others.
type Sender struct {
	Outbox Outbox
	// Hooks returns the estate's webhook of that name, false when the
	// estate has none.
	Hooks  func(name string) (Hook, bool)
	Client *http.Client
	Log    *slog.Logger
	Now    func() time.Time
	// Backoff is the wait before attempt n+1 after n failed (default:
	// 5 s doubling to at most an hour).
	Backoff     func(n int) time.Duration
	GiveUpAfter time.Duration
	Timeout     time.Duration
	Workers     int
	// Settled, when set, is told each attempt's recorded outcome.
	Settled func(webhook string, s store.Settlement)
}

// DefaultBackoff waits 5 s after the first failure, doubling to an hour.
func DefaultBackoff(n int) time.Duration {
	d := 5 * time.Second
	for i := 1; i < n && d < time.Hour; i++ {
		d *= 2
	}
	return min(d, time.Hour)
}

func (s *Sender) defaults() {
	if s.Now == nil {
		s.Now = time.Now
	}
	if s.Backoff == nil {
		s.Backoff = DefaultBackoff
	}
	if s.GiveUpAfter <= 0 {
		s.GiveUpAfter = DefaultGiveUpAfter
	}
	if s.Timeout <= 0 {
		s.Timeout = DefaultTimeout
	}
	if s.Workers <= 0 {
		s.Workers = DefaultWorkers
	}
	if s.Client == nil {
		// A webhook answers itself: a redirect is an answer that fails.
		s.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if s.Log == nil {
		s.Log = slog.New(slog.DiscardHandler)
	}
}

// Send makes one attempt at each delivery due now (at most limit) and
// records each outcome; it returns how many it attempted.
func (s *Sender) Send(ctx context.Context, limit int) (int, error) {
	s.defaults()
	due, err := s.Outbox.DueDeliveries(ctx, s.Now(), limit)
	if err != nil {
		return 0, fmt.Errorf("notify: reading the due deliveries: %w", err)
	}
	work := make(chan store.Delivery)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for range min(s.Workers, len(due)) {
		wg.Go(func() {
			for d := range work {
				out := s.attempt(ctx, d)
				if err := s.Outbox.SettleDelivery(ctx, d.ID, out); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("notify: recording delivery %s: %w", d.ID, err))
					mu.Unlock()
				} else if s.Settled != nil {
					s.Settled(d.Webhook, out)
				}
			}
		})
	}
	for _, d := range due {
		work <- d
	}
	close(work)
	wg.Wait()
	return len(due), errors.Join(errs...)
}

// attempt posts d once and says what came of it.
func (s *Sender) attempt(ctx context.Context, d store.Delivery) store.Settlement {
	hook, ok := s.Hooks(d.Webhook)
	if !ok {
		return store.Settlement{At: s.Now(), Err: "webhook " + d.Webhook + " is no longer in the estate; given up"}
	}
	err := s.post(ctx, hook, d)
	now := s.Now()
	if err == nil {
		return store.Settlement{At: now, Delivered: true}
	}
	next := now.Add(s.Backoff(d.Attempts + 1))
	if next.Sub(d.Created) > s.GiveUpAfter {
		s.Log.Warn("notification given up", "webhook", d.Webhook, "delivery", d.ID, "attempts", d.Attempts+1, "err", err)
		return store.Settlement{At: now, Err: err.Error() + fmt.Sprintf("; given up after %d attempts over %s", d.Attempts+1, now.Sub(d.Created).Round(time.Second))}
	}
	return store.Settlement{At: now, Err: err.Error(), NextAt: next}
}

func (s *Sender) post(ctx context.Context, hook Hook, d store.Delivery) error {
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, hook.URL, bytes.NewReader(d.Body))
	if err != nil {
		return err
	}
	ts, sig := Sign(hook.Secret, s.Now(), d.Body)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "myriarchd")
	req.Header.Set(TimestampHeader, ts)
	req.Header.Set(SignatureHeader, sig)
	req.Header.Set(DeliveryHeader, d.ID)
	req.Header.Set(EventHeader, d.Event)
	resp, err := s.Client.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("no answer within %s", s.Timeout)
		}
		return err
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if resp.StatusCode/100 == 2 {
		return nil
	}
	msg := strings.TrimSpace(strings.ToValidUTF8(string(answer), "?"))
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	if msg == "" {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return fmt.Errorf("HTTP %d: %s", resp.StatusCode, msg)
}
