package cluster

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/myriarch/myriarch/server/admin"
)

// ErrNoLeader: no instance leading the store answered a request in time
// (an admin.ErrUnavailable).
var ErrNoLeader = fmt.Errorf("no leading instance answered; try again: %w", admin.ErrUnavailable)

// Requests carries the actions an operator asks of any instance (retry a
// collector, pause a fleet…) to the leading instance, which alone decides
// rollouts, and brings back its answer: over the notification channel, so
// it needs nothing but the store. The leader answers once what the action
// changed is written and announced, so the asking instance has it before
// the answer.
type Requests struct {
	n       *Notifier
	log     *slog.Logger
	leading func() bool
	flush   func()
	timeout time.Duration

	mu       sync.Mutex
	handlers map[string]handler            // guarded by mu
	waiting  map[string]chan requestResult // guarded by mu
}

var _ admin.Requests = (*Requests)(nil)

// handler acts on a request and returns its result.
type handler = func(ctx context.Context, args []string) (string, error)

type request struct {
	ID   string   `json:"id"`
	Op   string   `json:"op"`
	Args []string `json:"args"`
}

type requestResult struct {
	ID     string `json:"id"`
	Result string `json:"result,omitempty"`
	Error  string `json:"error,omitempty"`
	// Unavailable: the leader could not act now (an admin.ErrUnavailable).
	Unavailable bool `json:"unavailable,omitempty"`
}

// unavailableError is a leader's admin.ErrUnavailable, come back.
type unavailableError string

func (e unavailableError) Error() string { return string(e) }
func (unavailableError) Unwrap() error   { return admin.ErrUnavailable }

// NewRequests carries requests over n; leading says whether this instance
// leads (it then acts itself); flush writes what the leader's actions
// changed, before it answers.
func NewRequests(n *Notifier, log *slog.Logger, leading func() bool, flush func()) *Requests {
	return &Requests{n: n, log: log, leading: leading, flush: flush, timeout: 15 * time.Second,
		handlers: map[string]handler{}, waiting: map[string]chan requestResult{}}
}

// Handle sets what the leader does for op. Call before traffic.
func (r *Requests) Handle(op string, h func(ctx context.Context, args []string) (string, error)) {
	r.mu.Lock()
	r.handlers[op] = h
	r.mu.Unlock()
}

// Ask has the leader act on op and returns its result: at once when this
// instance leads, otherwise once the leader answered (an error it returned
// comes back with its message), or ErrNoLeader after a while without one.
func (r *Requests) Ask(ctx context.Context, op string, args ...string) (string, error) {
	if r.leading() {
		return r.run(ctx, request{Op: op, Args: args})
	}
	var id [12]byte
	rand.Read(id[:])
	req := request{ID: hex.EncodeToString(id[:]), Op: op, Args: args}
	payload, err := encodeMsg(req)
	if err != nil {
		return "", err
	}
	ch := make(chan requestResult, 1)
	r.mu.Lock()
	r.waiting[req.ID] = ch
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.waiting, req.ID)
		r.mu.Unlock()
	}()
	r.n.Publish(KindRequest, payload)
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	select {
	case res := <-ch:
		switch {
		case res.Unavailable:
			return "", unavailableError(res.Error)
		case res.Error != "":
			return "", errors.New(res.Error)
		}
		return res.Result, nil
	case <-ctx.Done():
		return "", fmt.Errorf("%s: %w", op, ErrNoLeader)
	}
}

func (r *Requests) run(ctx context.Context, req request) (string, error) {
	r.mu.Lock()
	h := r.handlers[req.Op]
	r.mu.Unlock()
	if h == nil {
		return "", fmt.Errorf("unknown request %q", req.Op)
	}
	return h(ctx, req.Args)
}

// serve acts on the requests of a KindRequest change when this instance
// leads, and publishes the answers.
func (r *Requests) serve(ctx context.Context, c Change) {
	if !r.leading() {
		return
	}
	var answers []string
	defer func() {
		if len(answers) > 0 {
			// What the actions changed is announced before the answers.
			r.flush()
			r.n.Publish(KindDone, answers...)
		}
	}()
	for _, id := range c.IDs {
		var req request
		if err := decodeMsg(id, &req); err != nil || req.ID == "" {
			r.log.Warn("unreadable request from another instance", "err", err)
			continue
		}
		res := requestResult{ID: req.ID}
		out, err := r.run(ctx, req)
		if err != nil {
			res.Error, res.Unavailable = err.Error(), errors.Is(err, admin.ErrUnavailable)
			if len(res.Error) > 1000 {
				res.Error = res.Error[:1000] + "…"
			}
		} else {
			res.Result = out
		}
		if payload, err := encodeMsg(res); err == nil {
			answers = append(answers, payload)
		}
	}
}

// done hands the answers of a KindDone change to their waiting Ask.
func (r *Requests) done(c Change) {
	for _, id := range c.IDs {
		var res requestResult
		if decodeMsg(id, &res) != nil {
			continue
		}
		r.mu.Lock()
		ch := r.waiting[res.ID]
		r.mu.Unlock()
		if ch != nil {
			select {
			case ch <- res:
			default:
			}
		}
	}
}

// maxMsg keeps one message well inside a notification.
const maxMsg = 3000

// encodeMsg makes v a notification ID: JSON in unpadded base64url (no
// separator of the payload in it).
func encodeMsg(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	s := base64.RawURLEncoding.EncodeToString(b)
	if len(s) > maxMsg {
		return "", fmt.Errorf("request of %d bytes is too large", len(s))
	}
	return s, nil
}

func decodeMsg(s string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
