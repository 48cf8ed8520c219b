package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/server/estate"
	"github.com/myriarch/myriarch/server/store"
)

// Store is the part of the store a Notifier uses: it adds deliveries and
// its Sender sends them.
type Store interface {
	Outbox
	PutDeliveries(ctx context.Context, ds []store.Delivery) (kept []string, err error)
}

// Defaults of a Notifier.
const (
	DefaultWindow = 30 * time.Second
	DefaultPoll   = time.Second
	// MaxQueued bounds the occurrences waiting for the next pass; more
	// are counted as dropped (and logged), never block their caller.
	MaxQueued = 100_000
	// closeWrite bounds the last write of open batches at Close.
	closeWrite = 10 * time.Second
)

// Config configures a Notifier.
type Config struct {
	Store Store
	// Window is the debounce window: an event of a fleet is sent at most
	// once per window, listing every occurrence in it (default 30 s).
	Window time.Duration
	// Poll is how often occurrences are gathered and due deliveries sent
	// (default 1 s).
	Poll time.Duration
	// Leads reports whether this instance sends the deliveries (nil:
	// always). With several instances on one store, only the leader
	// sends; every instance adds the batches of what it observed.
	Leads func() bool
	// FleetOf names the fleet of an agent (its instance UID), "" for none;
	// asked without any lock of the caller of Add, for occurrences that
	// name an agent and no fleet.
	FleetOf func(agent string) string
	// Sender is how deliveries are attempted.
	Sender SenderSettings
	Log    *slog.Logger
	Now    func() time.Time
}

// Body is what a webhook receives: one batch, with the delivery's id
// (also in X-Myriarch-Delivery) and the webhook's name.
type Body struct {
	ID      string `json:"id"`
	Webhook string `json:"webhook"`
	Batch
}

// Stats are what a Notifier counted since it started.
type Stats struct {
	// Events counts occurrences by event, Dropped those not kept because
	// MaxQueued were waiting.
	Events  map[string]uint64
	Dropped uint64
	// By webhook: attempts delivered, failed (to be retried) and given up.
	Delivered, Failed, GivenUp map[string]uint64
}

// Notifier turns occurrences into webhook deliveries: it gathers them per
// event and fleet for Window (one body for a fleet-wide failure) into a
// delivery for every webhook that wants the batch, and, where it leads,
// sends the stored deliveries with a Sender. A batch is in the store from
// its first occurrence on, due at its window's end (and a little more, so
// its last occurrences are in before it is sent), and rewritten at every
// pass that added to it; so a crash loses at most one pass (Poll) of
// occurrences, and a restart or a failover to another instance none: any
// instance that leads sends what is due. A batch still open when the
// Notifier closes is made due at once.
//
// Add may be called from any goroutine, with the caller's locks held: it
// never blocks. SetWebhooks may be called at any time. Start once, then
// Close once; after Close, Add drops what it is given.
type Notifier struct {
	c      Config
	sender *Sender
	deb    Debouncer // owned by the gathering goroutine (and Close after it)

	// ids are the delivery ids of the open batches, per webhook; owned
	// like deb.
	ids map[string]map[string]string
	// stored is, per delivery id of an open batch, the whole batch as its
	// last stored body was made from; base, per delivery id that
	// continues one attempted before its batch closed, the whole batch
	// that delivery carries already (its body lists what came since).
	// Owned like deb.
	stored, base map[string]Batch

	mu       sync.Mutex
	incoming []Occurrence              // guarded by mu
	hooks    map[string]estate.Webhook // guarded by mu
	// hooksKnown: SetWebhooks has run. Before it (a start, until the
	// estate is loaded) nothing is sent, and what comes in waits: no
	// delivery is given up, no occurrence dropped, for a webhook the
	// estate will name.
	hooksKnown bool             // guarded by mu
	stats      Stats            // guarded by mu
	closed     bool             // guarded by mu
	unsaved    []store.Delivery // deliveries the store refused, written again; guarded by mu

	cancel context.CancelFunc
	done   sync.WaitGroup
}

// New makes a Notifier; nothing runs until Start.
func New(c Config) *Notifier {
	if c.Window <= 0 {
		c.Window = DefaultWindow
	}
	if c.Poll <= 0 {
		c.Poll = DefaultPoll
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if c.Leads == nil {
		c.Leads = func() bool { return true }
	}
	n := &Notifier{c: c, deb: Debouncer{Window: c.Window}, hooks: map[string]estate.Webhook{}, ids: map[string]map[string]string{},
		stored: map[string]Batch{}, base: map[string]Batch{},
		stats: Stats{Events: map[string]uint64{}, Delivered: map[string]uint64{}, Failed: map[string]uint64{}, GivenUp: map[string]uint64{}}}
	n.sender = &Sender{SenderSettings: c.Sender, Outbox: c.Store, Hooks: n.hook, Names: n.names, Log: c.Log, Now: c.Now, Settled: n.settled}
	return n
}

// SetWebhooks makes ws the webhooks in force (the estate's).
func (n *Notifier) SetWebhooks(ws []estate.Webhook) {
	m := make(map[string]estate.Webhook, len(ws))
	for _, w := range ws {
		m[w.Name] = w
	}
	n.mu.Lock()
	n.hooks, n.hooksKnown = m, true
	n.mu.Unlock()
}

func (n *Notifier) webhooksKnown() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.hooksKnown
}

func (n *Notifier) hook(name string) (Hook, bool) {
	n.mu.Lock()
	w, ok := n.hooks[name]
	n.mu.Unlock()
	return Hook{URL: w.URL, Secret: w.Secret}, ok
}

func (n *Notifier) names() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]string, 0, len(n.hooks))
	for name := range n.hooks {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

func (n *Notifier) settled(webhook string, s store.Settlement) {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case s.Delivered:
		n.stats.Delivered[webhook]++
	case s.NextAt.IsZero():
		n.stats.GivenUp[webhook]++
	default:
		n.stats.Failed[webhook]++
	}
}

// Add takes one occurrence; it never blocks.
func (n *Notifier) Add(o Occurrence) {
	if o.Time.IsZero() {
		o.Time = n.c.Now()
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	n.stats.Events[o.Event]++
	if len(n.incoming) >= MaxQueued {
		n.stats.Dropped++
		if n.stats.Dropped == 1 || n.stats.Dropped%10_000 == 0 {
			n.c.Log.Error("notification occurrences dropped: too many waiting", "dropped", n.stats.Dropped, "event", o.Event)
		}
		return
	}
	n.incoming = append(n.incoming, o)
}

// Stats returns a copy of what was counted.
func (n *Notifier) Stats() Stats {
	n.mu.Lock()
	defer n.mu.Unlock()
	return Stats{Events: maps.Clone(n.stats.Events), Dropped: n.stats.Dropped, Delivered: maps.Clone(n.stats.Delivered),
		Failed: maps.Clone(n.stats.Failed), GivenUp: maps.Clone(n.stats.GivenUp)}
}

// Start runs the gathering and the sending in the background.
func (n *Notifier) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	n.done.Add(2)
	go func() {
		defer n.done.Done()
		n.every(ctx, func() { n.gather(ctx, n.c.Now()) })
	}()
	go func() {
		defer n.done.Done()
		n.every(ctx, func() { n.send(ctx) })
	}()
}

func (n *Notifier) every(ctx context.Context, fn func()) {
	t := time.NewTicker(n.c.Poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

// Close stops the background work and stores every batch still open, so
// what was observed is sent by whichever instance sends next.
func (n *Notifier) Close() error {
	if n.cancel != nil {
		n.cancel()
		n.done.Wait()
		n.sender.Wait()
	}
	n.mu.Lock()
	n.closed = true
	n.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), closeWrite)
	defer cancel()
	return n.gather(ctx, time.Time{})
}

// gather debounces what came in and stores the batches that changed, and
// those due at now for the last time (every open batch when now is zero,
// due at once).
func (n *Notifier) gather(ctx context.Context, now time.Time) error {
	n.mu.Lock()
	if !n.hooksKnown && !now.IsZero() {
		n.mu.Unlock()
		return nil // the occurrences wait for the webhooks in force
	}
	in := n.incoming
	n.incoming = nil
	hooks := n.hooks
	n.mu.Unlock()
	for _, o := range in {
		if o.Fleet == "" && o.Agent != "" && n.c.FleetOf != nil {
			o.Fleet = n.c.FleetOf(o.Agent)
		}
		if wanted(hooks, o.Event, o.Fleet) {
			n.deb.Add(o)
		}
	}
	closing := now.IsZero()
	if closing {
		now = n.c.Now()
	}
	var ds []store.Delivery
	var errs []error
	wholes := map[string]Batch{} // by delivery id, the whole batch its body is made from
	for _, b := range n.deb.Changed() {
		d, err := n.deliveries(b, hooks, b.First.Add(n.c.Window+2*n.c.Poll), wholes)
		ds, errs = append(ds, d...), append(errs, err)
	}
	due := now
	if closing {
		due = time.Unix(1<<40, 0)
	}
	for _, b := range n.deb.Due(due) {
		at := b.First.Add(n.c.Window + 2*n.c.Poll)
		if closing {
			at = now
		}
		d, err := n.deliveries(b, hooks, at, wholes)
		ds, errs = append(ds, d...), append(errs, err)
		delete(n.ids, batchID(b))
	}
	n.mu.Lock()
	ds = lastOfEach(append(n.unsaved, ds...))
	n.unsaved = nil
	n.mu.Unlock()
	if len(ds) == 0 {
		return errors.Join(errs...)
	}
	kept, werr := n.c.Store.PutDeliveries(ctx, ds)
	if werr == nil {
		n.storedAs(ds, kept, wholes)
	}
	if werr == nil && len(kept) > 0 {
		// Attempted before the occurrences of its last pass were in (a
		// pass late by more than 2 Poll): what came since its last stored
		// body goes under a new id, which the batch's later passes write.
		again := n.resend(ds, kept, wholes)
		n.c.Log.Warn("notification batches attempted before their last occurrences were stored; sending what came since as another delivery",
			"deliveries", len(again))
		_, werr = n.c.Store.PutDeliveries(ctx, again)
		if werr == nil {
			n.storedAs(again, nil, wholes)
		}
		ds = again
	}
	if werr == nil {
		// What is kept of closed batches goes once they are stored: a
		// write to try again still needs it (see resend).
		n.forgetClosed()
	} else {
		n.mu.Lock()
		if len(n.unsaved) < MaxQueued {
			n.unsaved = append(ds, n.unsaved...)
		}
		n.mu.Unlock()
		n.c.Log.Error("notifications not stored yet; trying again", "deliveries", len(ds), "err", werr)
		errs = append(errs, fmt.Errorf("notify: storing %d deliveries: %w", len(ds), werr))
	}
	return errors.Join(errs...)
}

// lastOfEach keeps, of deliveries with the same id (a batch that grew and
// closed in one pass, a write tried again), the last: each delivery is
// written, and continued, once a pass.
func lastOfEach(ds []store.Delivery) []store.Delivery {
	last := make(map[string]int, len(ds))
	for i, d := range ds {
		last[d.ID] = i
	}
	out := ds[:0]
	for i, d := range ds {
		if last[d.ID] == i {
			out = append(out, d)
		}
	}
	return out
}

// forgetClosed drops what is kept of delivery ids no open batch writes
// any more (their batch closed, or went on under another id).
func (n *Notifier) forgetClosed() {
	open := map[string]bool{}
	for _, ids := range n.ids {
		for _, id := range ids {
			open[id] = true
		}
	}
	for id := range n.stored {
		if !open[id] {
			delete(n.stored, id)
		}
	}
	for id := range n.base {
		if !open[id] {
			delete(n.base, id)
		}
	}
}

// storedAs records, for each delivery of ds stored (not in kept), the
// whole batch its body was made from.
func (n *Notifier) storedAs(ds []store.Delivery, kept []string, wholes map[string]Batch) {
	for _, d := range ds {
		if b, ok := wholes[d.ID]; ok && !slices.Contains(kept, d.ID) {
			n.stored[d.ID] = b
		}
	}
}

// resend makes, for each delivery of ds whose id is in kept (attempted
// already), a delivery under a new id, due now, of what its batch gathered
// since the kept one's last stored body; the batch's later passes write
// to the new id. Without a record of that body (a store write that failed
// and was retried), the whole batch goes again: nothing is lost.
func (n *Notifier) resend(ds []store.Delivery, kept []string, wholes map[string]Batch) []store.Delivery {
	var out []store.Delivery
	now := n.c.Now().UTC()
	for _, d := range ds {
		if !slices.Contains(kept, d.ID) {
			continue
		}
		id := newID()
		whole, ok := wholes[d.ID]
		if !ok {
			// A body written again after the store refused it.
			var b Body
			if json.Unmarshal(d.Body, &b) != nil {
				continue
			}
			whole = b.Batch
		}
		// What the attempted delivery carries is its last stored body;
		// without a record of it (none kept), the whole batch goes again:
		// nothing is lost.
		if sent, ok := n.stored[d.ID]; ok {
			n.base[id] = sent
		}
		wholes[id] = whole
		n.rename(d.ID, id)
		next := since(whole, n.base[id])
		if next.Count == 0 {
			continue // the attempted delivery says it all; later passes write to id
		}
		body, err := json.Marshal(Body{ID: id, Webhook: d.Webhook, Batch: next})
		if err != nil {
			continue
		}
		d.ID, d.NextAt, d.Body = id, now, body
		out = append(out, d)
	}
	return out
}

// since is what b gathered beyond base, an earlier state of the same
// batch: its items not in base, counted.
func since(b, base Batch) Batch {
	if base.Count == 0 {
		return b
	}
	seen := map[Item]int{}
	for _, it := range base.Items {
		seen[it]++
	}
	out := b
	out.Items = []Item{}
	for _, it := range b.Items {
		if seen[it] > 0 {
			seen[it]--
			continue
		}
		out.Items = append(out.Items, it)
	}
	out.Count = max(b.Count-base.Count, len(out.Items))
	out.Omitted = out.Count - len(out.Items)
	if len(out.Items) > 0 {
		out.First = out.Items[0].Time
	}
	return out
}

// rename makes an open batch's later passes write to id instead of
// old. Called by the gathering goroutine.
func (n *Notifier) rename(old, id string) {
	for _, ids := range n.ids {
		for hook, x := range ids {
			if x == old {
				ids[hook] = id
			}
		}
	}
}

func wanted(hooks map[string]estate.Webhook, event, fleet string) bool {
	for _, w := range hooks {
		if w.Wants(event, fleet) {
			return true
		}
	}
	return false
}

// batchID names a batch among those a Notifier has open: one per event
// and fleet at a time (not its First, which moves when an occurrence of
// an earlier time comes in late).
func batchID(b Batch) string {
	return b.Event + "\x00" + b.Fleet
}

func newID() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return id.String()
}

// deliveries makes b's delivery, due at at, for every webhook wanting it,
// each under the id it had at the batch's earlier passes (what b gathered
// beyond that id's base), noting in wholes the batch each was made from.
func (n *Notifier) deliveries(b Batch, hooks map[string]estate.Webhook, at time.Time, wholes map[string]Batch) ([]store.Delivery, error) {
	var out []store.Delivery
	var errs []error
	key := batchID(b)
	ids := n.ids[key]
	if ids == nil {
		ids = map[string]string{}
		n.ids[key] = ids
	}
	for name, w := range hooks {
		if !w.Wants(b.Event, b.Fleet) {
			continue
		}
		id := ids[name]
		if id == "" {
			id = newID()
			ids[name] = id
		}
		wholes[id] = b
		next := since(b, n.base[id])
		if next.Count == 0 {
			continue // a continuation with nothing beyond the attempted delivery
		}
		body, err := json.Marshal(Body{ID: id, Webhook: name, Batch: next})
		if err != nil {
			errs = append(errs, fmt.Errorf("notify: encoding a %s batch: %w", b.Event, err))
			continue
		}
		out = append(out, store.Delivery{ID: id, Webhook: name, Event: b.Event, Fleet: b.Fleet, Body: body,
			Created: b.First.UTC(), NextAt: at.UTC()})
	}
	return out, errors.Join(errs...)
}

// send starts attempts at the due deliveries, where this instance leads.
func (n *Notifier) send(ctx context.Context) {
	if !n.c.Leads() || !n.webhooksKnown() {
		return
	}
	if _, err := n.sender.Dispatch(ctx); err != nil && ctx.Err() == nil {
		n.c.Log.Error("notifications: sending", "err", err)
	}
}
