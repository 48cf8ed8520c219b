package cluster

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/myriarch/myriarch/server/store"
)

// Kinds of change. Unless said otherwise IDs are instance UIDs in hex.
const (
	// KindAgents: agent rows (and their events) were written.
	KindAgents = "agents"
	// KindReports: agents' reports were written (for the leader).
	KindReports = "reports"
	// KindTokens: enrollment tokens were created or revoked.
	KindTokens = "tokens"
	// KindOffers: the leader wrote collectors' offer records.
	KindOffers = "offers"
	// KindConfigs: the leader wrote configuration assignments.
	KindConfigs = "configs"
	// KindState: the leader wrote server state (fleets' rollout states).
	KindState = "state"
	// KindRelay: events were relayed to the instance each agent is
	// connected to.
	KindRelay = "relay"
	// KindRequest and KindDone carry operator actions to the leader and
	// its answers (see Requests); IDs are encoded messages.
	KindRequest = "request"
	KindDone    = "done"
)

// order is the order in which one round publishes its kinds: a change
// is received after the changes it may depend on (an agent's row before
// its report, a decision before the answer to the request that made it).
var order = []string{KindAgents, KindReports, KindTokens, KindOffers, KindConfigs, KindState, KindRelay, KindRequest, KindDone}

// Kinds are the kinds of change, in the order one round publishes them.
func Kinds() []string { return slices.Clone(order) }

// resyncKinds are owed a full reload when changes may have been missed.
var resyncKinds = []string{KindAgents, KindReports, KindTokens, KindOffers, KindConfigs, KindState, KindRelay}

// maxPayload keeps a notification below PostgreSQL's 8000-byte limit.
const maxPayload = 7000

// Change is what another instance changed.
type Change struct {
	Kind string
	IDs  []string
	// Resync: changes may have been missed (the listening connection was
	// lost, or more arrived than could be held): reload everything of Kind.
	Resync bool
}

// NotifierOptions tune a Notifier; zero values take the defaults.
type NotifierOptions struct {
	// Interval batches what is published: at most one round of
	// notifications per interval (default 100 ms).
	Interval time.Duration
	// MaxIDs bounds the IDs of one kind held for one round of publishing;
	// past it one resync notification replaces them (default 20 000).
	MaxIDs int
	// Queue bounds the changes received but not yet handled; past it they
	// are dropped for a resync of their kind (default 1 024).
	Queue int
	// Retry is the wait before a kind whose change could not be applied is
	// read again in full; it doubles with each failure in a row, up to
	// 30 s (default 1 s).
	Retry time.Duration
}

func (o *NotifierOptions) defaults() {
	if o.Interval <= 0 {
		o.Interval = 100 * time.Millisecond
	}
	if o.MaxIDs <= 0 {
		o.MaxIDs = 20000
	}
	if o.Queue <= 0 {
		o.Queue = 1024
	}
	if o.Retry <= 0 {
		o.Retry = time.Second
	}
}

// Notifier publishes this instance's changes and hands the other
// instances' to a handler. Publish never blocks on the database: IDs are
// collected and sent in batches. Call Start once, then Close.
type Notifier struct {
	bus  store.Notifications
	log  *slog.Logger
	opts NotifierOptions
	self string // this instance's id, to ignore its own notifications

	mu       sync.Mutex
	pending  map[string]map[string]struct{} // kind → IDs; guarded by mu
	overflow map[string]bool                // kind → resync instead; guarded by mu
	wake     chan struct{}

	queue   chan Change
	dropped sync.Map // kind → true: a resync is owed
	handled handled

	listening  chan struct{} // closed once listening first succeeded
	listenOnce sync.Once
	late       atomic.Bool // Start stopped waiting for listening: resync when it comes

	stop chan struct{}
	wg   sync.WaitGroup
}

// NewNotifier prepares a notifier on the shared store's notifications.
func NewNotifier(bus store.Notifications, log *slog.Logger, opts NotifierOptions) *Notifier {
	opts.defaults()
	var id [6]byte
	rand.Read(id[:])
	return &Notifier{
		bus: bus, log: log, opts: opts, self: hex.EncodeToString(id[:]),
		pending: map[string]map[string]struct{}{}, overflow: map[string]bool{},
		wake: make(chan struct{}, 1), queue: make(chan Change, opts.Queue), stop: make(chan struct{}),
		listening: make(chan struct{}),
	}
}

// ID names this instance in notifications.
func (n *Notifier) ID() string { return n.self }

// Publish tells the other instances that ids of kind changed (sent within
// an interval, batched with other changes).
func (n *Notifier) Publish(kind string, ids ...string) {
	n.mu.Lock()
	set := n.pending[kind]
	if set == nil {
		set = map[string]struct{}{}
		n.pending[kind] = set
	}
	if !n.overflow[kind] {
		for _, id := range ids {
			set[id] = struct{}{}
		}
		if len(set) > n.opts.MaxIDs {
			n.overflow[kind] = true
			clear(set)
		}
	}
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// Start listens and publishes until Close. It returns once the listening
// connection is up (or after 10 s: then every kind is resynced once it
// is), so that what the caller reads from the database afterwards misses
// no change. What is received waits (in the bounded queue) until Handle.
func (n *Notifier) Start() {
	n.wg.Add(2)
	go n.publishLoop()
	go n.listenLoop()
	select {
	case <-n.listening:
	case <-time.After(10 * time.Second):
		n.late.Store(true)
		n.log.Warn("not yet listening for the other instances' changes; what they change meanwhile is read once listening")
	}
}

// Handle calls handle for each change of another instance, one at a time,
// in the order received, until Close. Call it once, after Start. When
// handle fails, the change's kind (or the one an *Owed error names) is
// handed on again later as a resync, until a resync of it succeeds.
func (n *Notifier) Handle(handle func(Change) error) {
	n.wg.Add(1)
	go n.handleLoop(handle)
}

// Close stops the notifier after sending what was published.
func (n *Notifier) Close() {
	select {
	case <-n.stop:
		return
	default:
		close(n.stop)
	}
	n.wg.Wait()
	n.flush(context.Background())
}

func (n *Notifier) publishLoop() {
	defer n.wg.Done()
	for {
		select {
		case <-n.stop:
			return
		case <-n.wake:
		}
		n.flush(context.Background())
		select {
		case <-n.stop:
			return
		case <-time.After(n.opts.Interval):
		}
	}
}

// flush sends what is pending, one notification per payload-full of IDs.
func (n *Notifier) flush(ctx context.Context) {
	n.mu.Lock()
	var payloads []string
	kinds := slices.SortedFunc(maps.Keys(n.pending), func(a, b string) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(a, b))
	})
	for _, kind := range kinds {
		set := n.pending[kind]
		if n.overflow[kind] {
			payloads = append(payloads, n.self+"|"+kind+"|*")
			continue
		}
		var b strings.Builder
		for id := range set {
			if b.Len() > 0 && b.Len()+len(id)+1 > maxPayload {
				payloads = append(payloads, n.self+"|"+kind+"|"+b.String())
				b.Reset()
			}
			if b.Len() > 0 {
				b.WriteByte(',')
			}
			b.WriteString(id)
		}
		if b.Len() > 0 || len(set) == 0 {
			payloads = append(payloads, n.self+"|"+kind+"|"+b.String())
		}
	}
	n.pending = map[string]map[string]struct{}{}
	n.overflow = map[string]bool{}
	n.mu.Unlock()
	if len(payloads) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := n.bus.Notify(ctx, payloads); err != nil {
		// The others resync when their listening connection comes back; a
		// lost notification while the database answers is not expected.
		n.log.Warn("publishing changes to the other instances failed", "notifications", len(payloads), "err", err)
	}
}

// rank is a kind's place in order (unknown kinds last).
func rank(kind string) int {
	if i := slices.Index(order, kind); i >= 0 {
		return i
	}
	return len(order)
}

// listenLoop holds one subscription to the notifications; when it is lost it
// reconnects with growing waits and owes every kind a resync.
func (n *Notifier) listenLoop() {
	defer n.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-n.stop; cancel() }()
	wait := 200 * time.Millisecond
	first := true
	for ctx.Err() == nil {
		err := n.listen(ctx, first)
		if ctx.Err() != nil {
			return
		}
		n.log.Warn("listening for the other instances' changes failed; reconnecting", "retry_in", wait, "err", err)
		first = false
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, 10*time.Second)
	}
}

func (n *Notifier) listen(ctx context.Context, first bool) error {
	sub, err := n.bus.Listen(ctx)
	if err != nil {
		return err
	}
	defer sub.Close()
	n.listenOnce.Do(func() { close(n.listening) })
	if !first || n.late.Load() {
		n.late.Store(false)
		n.log.Info("listening for the other instances' changes again; reloading what may have been missed")
		for _, kind := range resyncKinds {
			n.enqueue(Change{Kind: kind, Resync: true})
		}
	}
	for {
		payload, err := sub.Next(ctx)
		if err != nil {
			return err
		}
		from, rest, _ := strings.Cut(payload, "|")
		kind, ids, ok := strings.Cut(rest, "|")
		if !ok || from == n.self {
			continue
		}
		c := Change{Kind: kind}
		switch ids {
		case "*":
			c.Resync = true
		case "":
		default:
			c.IDs = strings.Split(ids, ",")
		}
		n.enqueue(c)
	}
}

// enqueue hands c to the handler, or, when the queue is full, owes its
// kind a resync instead (a storm costs one reload, not unbounded memory).
func (n *Notifier) enqueue(c Change) {
	select {
	case n.queue <- c:
	default:
		if _, owed := n.dropped.LoadOrStore(c.Kind, true); !owed {
			n.log.Warn("the other instances' changes come faster than this instance applies them; what they changed is read again in full",
				"kind", c.Kind, "queue", n.opts.Queue)
		}
	}
}

func (n *Notifier) handleLoop(handle func(Change) error) {
	defer n.wg.Done()
	tick := time.NewTicker(n.opts.Interval)
	defer tick.Stop()
	failed := newRetries(n.opts.Retry)
	run := func(c Change) {
		t0 := time.Now()
		err := handle(c)
		n.handled.add(c, time.Since(t0), err != nil)
		if kind, wait := failed.record(c, err, time.Now()); kind != "" {
			n.log.Warn("applying the other instances' changes failed; what they changed is read again in full",
				"kind", c.Kind, "resync", c.Resync, "owed", kind, "retry_in", wait, "err", err)
		}
	}
	for {
		select {
		case <-n.stop:
			return
		case c := <-n.queue:
			for _, c := range coalesce(n.drain(c)) {
				run(c)
			}
		case <-tick.C:
		}
		owed := failed.due(time.Now())
		n.dropped.Range(func(k, _ any) bool {
			n.dropped.Delete(k)
			if kind := k.(string); !slices.Contains(owed, kind) {
				owed = append(owed, kind)
			}
			return true
		})
		slices.SortFunc(owed, func(a, b string) int { return cmp.Compare(rank(a), rank(b)) })
		for _, kind := range owed {
			run(Change{Kind: kind, Resync: true})
		}
	}
}

// drain returns c and whatever else is queued now.
func (n *Notifier) drain(c Change) []Change {
	cs := []Change{c}
	for range cap(n.queue) {
		select {
		case c := <-n.queue:
			cs = append(cs, c)
		default:
			return cs
		}
	}
	return cs
}

// coalesce makes one change of each kind out of cs (a resync if any was
// one; else every ID once), in the order kinds are published: one read
// for what several rounds of the other instances changed, so an instance
// that fell behind catches up instead of being owed a full reload. The
// IDs are not bounded here (the queue bounds what cs holds): reading the
// agents a backlog names, in chunks, costs less than reading every agent,
// and a full reload while behind would leave it further behind.
func coalesce(cs []Change) []Change {
	if len(cs) == 1 {
		return cs
	}
	var out []Change
	seen := map[string]map[string]struct{}{}
	for _, c := range cs {
		i := slices.IndexFunc(out, func(o Change) bool { return o.Kind == c.Kind })
		if i < 0 {
			out = append(out, Change{Kind: c.Kind})
			i = len(out) - 1
			seen[c.Kind] = map[string]struct{}{}
		}
		o := &out[i]
		if o.Resync || c.Resync {
			o.Resync, o.IDs = true, nil
			continue
		}
		for _, id := range c.IDs {
			if _, dup := seen[c.Kind][id]; !dup {
				seen[c.Kind][id] = struct{}{}
				o.IDs = append(o.IDs, id)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Change) int { return cmp.Compare(rank(a.Kind), rank(b.Kind)) })
	return out
}
