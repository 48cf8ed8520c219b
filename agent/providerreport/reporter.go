package providerreport

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/open-telemetry/opamp-go/client/types"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/providers"
	"github.com/myriarch/myriarch/internal/providerwire"
)

// MinInterval is the least time between two messages.
const MinInterval = time.Second

// Sender is the part of the OpAMP client the Reporter uses (opamp-go's
// client.OpAMPClient has it). SendCustomMessage fails with
// types.ErrCustomMessagePending while an earlier message is unsent and
// returns a channel that is closed when it is sent. The client's owner
// announces Capability with its other custom capabilities.
type Sender interface {
	SendCustomMessage(*protobufs.CustomMessage) (chan struct{}, error)
}

// Reporter sends the newest providers snapshot. Update and Connected may
// be called from any goroutine at any time, before or during Run; Run
// sends until its context ends. A Reporter is used by one Run at a time.
type Reporter struct {
	send     Sender
	log      *slog.Logger
	now      func() time.Time
	interval time.Duration // MinInterval; shorter in tests
	// Sent, when set, is told the size of each snapshot sent.
	Sent func(size int)

	mu      sync.Mutex
	latest  *providers.Snapshot // guarded by mu
	dirty   bool                // latest is not sent yet; guarded by mu
	seq     uint64              // guarded by mu
	lastOut []byte              // the last data sent (its seq zeroed); guarded by mu
	wake    chan struct{}
}

// New returns a Reporter sending through send.
func New(send Sender, log *slog.Logger) *Reporter {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Reporter{send: send, log: log, now: time.Now, interval: MinInterval, wake: make(chan struct{}, 1)}
}

// Capability is the custom capability to announce.
const Capability = providerwire.Capability

// Update makes s the snapshot to send.
func (r *Reporter) Update(s providers.Snapshot) {
	r.mu.Lock()
	r.latest, r.dirty = &s, true
	r.mu.Unlock()
	r.poke()
}

// Connected makes the Reporter send the newest snapshot again: the server
// of a new connection may not have it.
func (r *Reporter) Connected() {
	r.mu.Lock()
	r.dirty, r.lastOut = r.latest != nil, nil
	r.mu.Unlock()
	r.poke()
}

func (r *Reporter) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Run sends until ctx ends; it returns nil then.
func (r *Reporter) Run(ctx context.Context) error {
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.wake:
		}
		if wait := r.interval - r.now().Sub(last); !last.IsZero() && wait > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(wait):
			}
		}
		sent, err := r.sendLatest(ctx)
		if err != nil {
			r.log.Warn("sending the providers to the server failed; retrying", "err", err)
			r.retryLater(ctx)
			continue
		}
		if sent {
			last = r.now()
		}
	}
}

// sendLatest sends the newest snapshot if it is unsent and differs from
// the last one sent; it waits while an earlier message is pending.
func (r *Reporter) sendLatest(ctx context.Context) (bool, error) {
	r.mu.Lock()
	latest := r.latest
	if !r.dirty || latest == nil {
		r.mu.Unlock()
		return false, nil
	}
	r.dirty = false
	// Compared without its sequence number: equal data is not sent again.
	same := Encode(*latest, 0)
	if bytes.Equal(same, r.lastOut) {
		r.mu.Unlock()
		return false, nil
	}
	r.seq++
	msg := &protobufs.CustomMessage{Capability: providerwire.Capability, Type: providerwire.MessageType, Data: Encode(*latest, r.seq)}
	r.mu.Unlock()
	for {
		done, err := r.send.SendCustomMessage(msg)
		if errors.Is(err, types.ErrCustomMessagePending) {
			select {
			case <-ctx.Done():
				return false, nil
			case <-done:
				continue
			}
		}
		if err != nil {
			r.mu.Lock()
			r.dirty = true
			r.mu.Unlock()
			return false, err
		}
		break
	}
	r.mu.Lock()
	r.lastOut = same
	newer := r.dirty
	r.mu.Unlock()
	if r.Sent != nil {
		r.Sent(len(msg.Data))
	}
	if newer {
		r.poke()
	}
	return true, nil
}

func (r *Reporter) retryLater(ctx context.Context) {
	go func() {
		select {
		case <-ctx.Done():
		case <-time.After(5 * r.interval):
			r.poke()
		}
	}()
}
