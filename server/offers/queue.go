package offers

import (
	"sync"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"
)

type outItem struct {
	uid uuid.UUID
	msg *protobufs.PackagesAvailable
}

// queue is an unbounded FIFO, so evaluation never blocks on slow agents:
// a newer offer for the same updater replaces a queued older one.
type queue struct {
	mu     sync.Mutex
	cond   *sync.Cond                                 // on mu
	items  []uuid.UUID                                // guarded by mu
	latest map[uuid.UUID]*protobufs.PackagesAvailable // guarded by mu
	closed bool                                       // guarded by mu
}

func newQueue() *queue {
	q := &queue{latest: map[uuid.UUID]*protobufs.PackagesAvailable{}}
	q.cond = sync.NewCond(&q.mu)
	return q
}

func (q *queue) push(uid uuid.UUID, msg *protobufs.PackagesAvailable) {
	q.mu.Lock()
	if _, queued := q.latest[uid]; !queued {
		q.items = append(q.items, uid)
	}
	q.latest[uid] = msg
	q.mu.Unlock()
	q.cond.Signal()
}

func (q *queue) pop() (outItem, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) == 0 && !q.closed {
		q.cond.Wait()
	}
	if len(q.items) == 0 {
		return outItem{}, false
	}
	uid := q.items[0]
	q.items = q.items[1:]
	msg := q.latest[uid]
	delete(q.latest, uid)
	return outItem{uid: uid, msg: msg}, true
}

func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.cond.Broadcast()
}
