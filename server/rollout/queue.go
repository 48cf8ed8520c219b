package rollout

import (
	"sync"

	"github.com/google/uuid"
)

// Queue is an unbounded FIFO of agents to send something to, so that
// evaluation never blocks on slow agents. An agent is queued once however
// often it is pushed, with the value of its latest push: what it is sent
// is the newest. Close drops what is still queued (an agent is given what
// it lacks in the answer to its next message) and stops the goroutines
// serving the queue.
type Queue[V any] struct {
	mu     sync.Mutex
	cond   *sync.Cond      // on mu
	items  []uuid.UUID     // guarded by mu
	latest map[uuid.UUID]V // guarded by mu
	closed bool            // guarded by mu
	wg     sync.WaitGroup  // the Serve goroutines
}

// NewQueue makes an empty queue.
func NewQueue[V any]() *Queue[V] {
	q := &Queue[V]{latest: map[uuid.UUID]V{}}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// Push queues uid with v, replacing the value it is queued with; a push
// after Close is dropped.
func (q *Queue[V]) Push(uid uuid.UUID, v V) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	if _, queued := q.latest[uid]; !queued {
		q.items = append(q.items, uid)
		q.cond.Signal()
	}
	q.latest[uid] = v
}

// Pop waits for the oldest queued agent and takes it with its latest
// value; false once the queue is closed.
func (q *Queue[V]) Pop() (uuid.UUID, V, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) == 0 && !q.closed {
		q.cond.Wait()
	}
	if q.closed {
		var zero V
		return uuid.Nil, zero, false
	}
	uid := q.items[0]
	q.items = q.items[1:]
	v := q.latest[uid]
	delete(q.latest, uid)
	return uid, v, true
}

// Serve starts n goroutines that hand what they pop to send, until Close.
func (q *Queue[V]) Serve(n int, send func(uuid.UUID, V)) {
	for range n {
		q.wg.Add(1)
		go func() {
			defer q.wg.Done()
			for {
				uid, v, ok := q.Pop()
				if !ok {
					return
				}
				send(uid, v)
			}
		}()
	}
}

// Close stops the queue and waits for the Serve goroutines to return.
func (q *Queue[V]) Close() {
	q.mu.Lock()
	q.closed = true
	q.items, q.latest = nil, map[uuid.UUID]V{}
	q.mu.Unlock()
	q.cond.Broadcast()
	q.wg.Wait()
}
