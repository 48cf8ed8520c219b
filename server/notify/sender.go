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
	DueDeliveries(ctx context.Context, q store.DueQuery) ([]store.Delivery, error)
	ClaimDelivery(ctx context.Context, d store.Delivery, until time.Time) (bool, error)
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
	DefaultPerWebhook  = 2
	// maxAnswer bounds what is read of a receiver's answer.
	maxAnswer = 4 << 10
	// settleWithin bounds recording an attempt's outcome, which goes on
	// when the Sender is stopped mid-attempt: a body the receiver took is
	// recorded as delivered, not posted again by the next instance.
	settleWithin = 10 * time.Second
	// claimSlack is how long past its Timeout an attempt's claim holds:
	// past the recording of its outcome, with a margin for the clocks of
	// several instances. A delivery whose attempt is not settled by then
	// (its instance died mid-attempt) is due again, for whichever
	// instance sends.
	claimSlack = settleWithin + 5*time.Second
)

// Sender delivers the outbox's due deliveries: each is POSTed, signed, to
// its webhook's URL; a 2xx answer delivers it, anything else (an error
// status, no answer within Timeout, no connection) is retried with
// backoff until GiveUpAfter has passed since it was created. A delivery
// whose webhook is no longer in the estate is given up.
//
// Each attempt is claimed in the store first (store.ClaimDelivery): of
// the instances and passes that read a delivery due, one posts it; a
// delivery is posted again only after an attempt that failed, or one
// whose outcome was never recorded (its sender died mid-attempt): at
// least once, with the same id for receivers to recognise.
//
// At most Workers attempts run at once, and at most PerWebhook to one
// webhook: a receiver that never answers holds its own attempts for
// Timeout, never the others'. Dispatch starts attempts and returns; Send
// dispatches and waits. A Sender's methods may be called from one
// goroutine at a time.
type Sender struct {
	SenderSettings
	Outbox Outbox
	// Hooks returns the estate's webhook of that name, false when the
	// estate has none.
	Hooks func(name string) (Hook, bool)
	// Names lists the estate's webhooks.
	Names func() []string
	Log   *slog.Logger
	Now   func() time.Time
	// Settled, when set, is told each attempt's recorded outcome.
	Settled func(webhook string, s store.Settlement)

	once     sync.Once
	wg       sync.WaitGroup
	mu       sync.Mutex
	inflight map[string]string // delivery id -> webhook; guarded by mu
	perHook  map[string]int    // attempts in flight per webhook; guarded by mu
	errs     []error           // recording failures since the last Send; guarded by mu
}

// SenderSettings are how a Sender attempts; zero values take the defaults.
type SenderSettings struct {
	Client *http.Client
	// Backoff is the wait before attempt n+1 after n failed (default:
	// 5 s doubling to at most an hour).
	Backoff     func(n int) time.Duration
	GiveUpAfter time.Duration
	Timeout     time.Duration
	Workers     int
	PerWebhook  int
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
	if s.PerWebhook <= 0 {
		s.PerWebhook = DefaultPerWebhook
	}
	if s.Client == nil {
		// A webhook answers itself: a redirect is an answer that fails.
		s.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if s.Log == nil {
		s.Log = slog.New(slog.DiscardHandler)
	}
	if s.Names == nil {
		s.Names = func() []string { return nil }
	}
	s.inflight, s.perHook = map[string]string{}, map[string]int{}
}

// Send dispatches what is due now and waits for those attempts; it
// returns how many it started and why any outcome was not recorded.
func (s *Sender) Send(ctx context.Context) (int, error) {
	n, err := s.Dispatch(ctx)
	s.Wait()
	s.mu.Lock()
	errs := s.errs
	s.errs = nil
	s.mu.Unlock()
	return n, errors.Join(append(errs, err)...)
}

// Wait waits for the attempts in flight.
func (s *Sender) Wait() {
	s.once.Do(s.defaults)
	s.wg.Wait()
}

// Dispatch starts an attempt at each due delivery that has room (Workers,
// PerWebhook), each webhook's earliest due first, and returns how many it
// started, with the errors of recording the attempts that ended since the
// last call. Deliveries of webhooks gone from the estate are due too (and
// given up).
func (s *Sender) Dispatch(ctx context.Context) (int, error) {
	s.once.Do(s.defaults)
	names := s.Names()
	started := 0
	s.mu.Lock()
	errs := s.errs // of attempts that ended since the last call
	s.errs = nil
	s.mu.Unlock()
	for _, q := range append(dueQueries(names), store.DueQuery{Except: names}) {
		s.mu.Lock()
		free := s.Workers - len(s.inflight)
		if q.Webhook != "" {
			free = min(free, s.PerWebhook-s.perHook[q.Webhook])
		}
		s.mu.Unlock()
		if free <= 0 {
			continue
		}
		q.Now, q.Limit = s.Now(), free // those in flight are claimed: not due
		due, err := s.Outbox.DueDeliveries(ctx, q)
		if err != nil {
			errs = append(errs, fmt.Errorf("notify: reading the due deliveries: %w", err))
			continue
		}
		for _, d := range due {
			if free == 0 {
				break
			}
			if s.start(ctx, d) {
				started++
				free--
			}
		}
	}
	return started, errors.Join(errs...)
}

func dueQueries(names []string) []store.DueQuery {
	qs := make([]store.DueQuery, len(names))
	for i, n := range names {
		qs[i] = store.DueQuery{Webhook: n}
	}
	return qs
}

// start begins an attempt at d unless one is in flight, its webhook or
// the Sender is full, or another claimed d first.
func (s *Sender) start(ctx context.Context, d store.Delivery) bool {
	s.mu.Lock()
	if _, ok := s.inflight[d.ID]; ok || len(s.inflight) >= s.Workers || s.perHook[d.Webhook] >= s.PerWebhook {
		s.mu.Unlock()
		return false
	}
	s.inflight[d.ID] = d.Webhook
	s.perHook[d.Webhook]++
	s.mu.Unlock()
	until := s.Now().Add(s.Timeout + claimSlack)
	claimed, err := s.Outbox.ClaimDelivery(ctx, d, until)
	if !claimed {
		s.done(d, err, "claiming")
		return false
	}
	d.Attempts, d.NextAt = d.Attempts+1, until
	s.wg.Go(func() {
		out := s.attempt(ctx, d)
		out.Attempt = d.Attempts
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleWithin)
		err := s.Outbox.SettleDelivery(sctx, d.ID, out)
		cancel()
		s.done(d, err, "recording")
		if err == nil && s.Settled != nil {
			s.Settled(d.Webhook, out)
		}
	})
	return true
}

// done ends d's time in flight; err, of what was doing it, is returned
// by the next Dispatch.
func (s *Sender) done(d store.Delivery, err error, doing string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.inflight, d.ID)
	if s.perHook[d.Webhook]--; s.perHook[d.Webhook] == 0 {
		delete(s.perHook, d.Webhook)
	}
	if err != nil {
		s.errs = append(s.errs, fmt.Errorf("notify: %s delivery %s: %w", doing, d.ID, err))
	}
}

// attempt posts d once (its claimed attempt d.Attempts) and says what
// came of it.
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
	next := now.Add(s.Backoff(d.Attempts))
	if next.Sub(d.Created) > s.GiveUpAfter {
		s.Log.Warn("notification given up", "webhook", d.Webhook, "delivery", d.ID, "attempts", d.Attempts, "err", err)
		return store.Settlement{At: now, Err: err.Error() + fmt.Sprintf("; given up after %d attempts over %s", d.Attempts, now.Sub(d.Created).Round(time.Second))}
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
