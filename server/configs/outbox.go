package configs

import (
	"sync"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"
)

// outbox is a FIFO of agents to send their desired configuration to, each
// queued once however often it is pushed: what is sent is decided when it
// is popped, so the latest desired hash wins.
type outbox struct {
	mu     sync.Mutex
	cond   *sync.Cond
	items  []uuid.UUID        // guarded by mu
	queued map[uuid.UUID]bool // guarded by mu
	closed bool               // guarded by mu
}

func newOutbox() *outbox {
	o := &outbox{queued: map[uuid.UUID]bool{}}
	o.cond = sync.NewCond(&o.mu)
	return o
}

func (o *outbox) push(uid uuid.UUID) {
	o.mu.Lock()
	if !o.queued[uid] && !o.closed {
		o.queued[uid] = true
		o.items = append(o.items, uid)
		o.cond.Signal()
	}
	o.mu.Unlock()
}

func (o *outbox) pop() (uuid.UUID, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for len(o.items) == 0 && !o.closed {
		o.cond.Wait()
	}
	if o.closed {
		return uuid.Nil, false
	}
	uid := o.items[0]
	o.items = o.items[1:]
	delete(o.queued, uid)
	return uid, true
}

func (o *outbox) close() {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	o.cond.Broadcast()
}

// sender delivers configurations over WebSockets. An agent that cannot be
// reached now (plain HTTP, or between connections) gets it in the answer
// to its next message instead.
func (e *Engine) sender(s Sender) {
	defer e.wg.Done()
	for {
		uid, ok := e.outbox.pop()
		if !ok {
			return
		}
		e.mu.Lock()
		r := e.records[uid]
		var rc *protobufs.AgentRemoteConfig
		if r != nil && r.connected && e.shouldSend(r) {
			rc = e.remoteConfig(r)
		}
		e.mu.Unlock()
		if rc == nil {
			continue
		}
		if !s.Send(uid, &protobufs.ServerToAgent{RemoteConfig: rc}) {
			e.mu.Lock()
			if r.sentHash == hexOf(rc.ConfigHash) {
				r.sendAgain()
			}
			e.mu.Unlock()
		}
	}
}
