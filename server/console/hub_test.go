package console

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"go.uber.org/goleak"

	"github.com/myriarch/myriarch/server/accounts"
	"github.com/myriarch/myriarch/server/admin"
)

func drain(s *subscriber) int {
	n := 0
	for {
		select {
		case <-s.wake:
			n++
		default:
			return n
		}
	}
}

// Changes are coalesced per tick, delivered only to the views they
// concern, and never block the notifier, however many arrive.
func TestHubCoalescesAndRoutesChanges(t *testing.T) {
	defer goleak.VerifyNone(t)
	h := newHub(time.Hour) // ticks by hand
	defer h.close()
	a, b := uuid.New(), uuid.New()
	all := h.subscribe(nil, 1)
	onlyA := h.subscribe([]uuid.UUID{a}, 1)
	both := h.subscribe([]uuid.UUID{a, b}, 1)

	for range 10000 {
		h.change(b)
	}
	h.tick()
	if n := drain(all); n != 1 {
		t.Errorf("every-change view woken %d times for one tick", n)
	}
	if n := drain(onlyA); n != 0 {
		t.Errorf("a view of agent a woken by changes of b")
	}
	if n := drain(both); n != 1 {
		t.Errorf("a view of a and b woken %d times", n)
	}

	h.tick() // nothing changed since
	if drain(all)+drain(onlyA)+drain(both) != 0 {
		t.Error("woken without a change")
	}

	// More changed agents than the hub remembers: every view refreshes.
	for range maxDirty + 1 {
		h.change(uuid.New())
	}
	h.tick()
	if drain(all) != 1 || drain(onlyA) != 1 || drain(both) != 1 {
		t.Error("overflowing changes did not wake every view")
	}

	// A view that has not taken its wake-up stays woken once; the hub does not block.
	h.change(a)
	h.tick()
	h.change(a)
	h.tick()
	if n := drain(onlyA); n != 1 {
		t.Errorf("slow view holds %d wake-ups", n)
	}

	h.changeAll()
	h.tick()
	if drain(onlyA) != 1 {
		t.Error("changeAll did not wake a per-agent view")
	}

	// A slow view (every 3 ticks) keeps a change until its turn, then is woken once.
	slow := h.subscribe(nil, 3)
	h.change(b)
	h.tick()
	h.tick()
	if drain(slow) != 0 {
		t.Error("a view of every 3 ticks woken after 2")
	}
	h.tick()
	if drain(slow) != 1 {
		t.Error("a view of every 3 ticks lost its change")
	}
	h.tick()
	h.tick()
	h.tick()
	if drain(slow) != 0 {
		t.Error("a slow view woken without a change")
	}
	h.unsubscribe(slow)

	h.unsubscribe(all)
	h.unsubscribe(onlyA)
	h.unsubscribe(both)
	if h.active.Load() != 0 {
		t.Fatalf("%d subscribers after unsubscribing all", h.active.Load())
	}
	h.change(a) // with nobody listening nothing is recorded
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.changed || len(h.dirty) > 0 {
		t.Error("changes recorded without subscribers")
	}
}

// The ticker wakes a view at most once per interval however often its
// agent changes.
func TestHubWakesAtMostOncePerInterval(t *testing.T) {
	defer goleak.VerifyNone(t)
	const interval = 50 * time.Millisecond
	h := newHub(interval)
	defer h.close()
	uid := uuid.New()
	s := h.subscribe([]uuid.UUID{uid}, 1)
	defer h.unsubscribe(s)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				h.change(uid)
			}
		}
	}()
	start := time.Now()
	wakes := 0
	for time.Since(start) < 20*interval {
		select {
		case <-s.wake:
			wakes++
		case <-time.After(interval):
		}
	}
	close(stop)
	<-done
	elapsed := time.Since(start)
	if max := int(elapsed/interval) + 1; wakes > max || wakes == 0 {
		t.Fatalf("%d wake-ups in %s at one per %s (at most %d)", wakes, elapsed, interval, max)
	}
}

// Close ends the hub's goroutine and every live stream; the sessions stay
// in the store (a restart logs nobody out).
func TestCloseEndsStreamsAndTheHub(t *testing.T) {
	// The store's own goroutine ends when the test's cleanup closes it.
	defer goleak.VerifyNone(t, goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"))
	db := testStore(t)
	c := New(Options{API: admin.New(admin.Deps{AdminToken: "adm"}), AdminToken: "adm", Store: db, Users: accounts.New(db, accounts.Options{})})
	s := c.sessions.mustCreate(t, adminWho)
	c.Close()
	select {
	case <-s.done:
	default:
		t.Fatal("a live stream outlived Close")
	}
	if _, ok := c.sessions.get(ctx, s.id); !ok {
		t.Fatal("a session was lost at Close")
	}
}
