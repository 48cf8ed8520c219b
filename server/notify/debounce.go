package notify

import (
	"sort"
	"time"
)

// Occurrence is one thing that happened: an event of a fleet ("" for none,
// as an estate reload), about an agent (zero for none).
type Occurrence struct {
	Event   string
	Fleet   string
	Agent   string // the agent's instance UID, "" for none
	Message string
	Time    time.Time
}

// Item is one occurrence in a batch's body.
type Item struct {
	Agent   string    `json:"agent,omitempty"`
	Message string    `json:"message"`
	Time    time.Time `json:"time"`
}

// Batch is what one webhook body says: the occurrences of one event of one
// fleet within one debounce window. Items holds the first MaxItems; Count
// counts them all.
type Batch struct {
	Event string    `json:"event"`
	Fleet string    `json:"fleet,omitempty"`
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
	Count int       `json:"count"`
	Items []Item    `json:"items"`
	// Omitted is Count less the items listed.
	Omitted int `json:"omitted"`
}

// MaxItems bounds the occurrences a body lists.
const MaxItems = 1000

type batchKey struct{ event, fleet string }

// Debouncer gathers occurrences into one batch per event and fleet: a
// batch opens with its first occurrence and is due Window later, however
// many occurrences come meanwhile (a fleet-wide failure of 500 collectors
// is one body, not 500). It is not safe for concurrent use.
type Debouncer struct {
	Window  time.Duration
	open    map[batchKey]*Batch
	order   []batchKey // by opening
	changed map[batchKey]bool
}

// Add puts o in its batch.
func (d *Debouncer) Add(o Occurrence) {
	if d.open == nil {
		d.open = map[batchKey]*Batch{}
		d.changed = map[batchKey]bool{}
	}
	d.changed[batchKey{o.Event, o.Fleet}] = true
	k := batchKey{o.Event, o.Fleet}
	b := d.open[k]
	if b == nil {
		b = &Batch{Event: o.Event, Fleet: o.Fleet, First: o.Time, Items: []Item{}}
		d.open[k] = b
		d.order = append(d.order, k)
	}
	b.Count++
	if o.Time.Before(b.First) {
		b.First = o.Time
	}
	if o.Time.After(b.Last) {
		b.Last = o.Time
	}
	if len(b.Items) < MaxItems {
		b.Items = append(b.Items, Item{Agent: o.Agent, Message: o.Message, Time: o.Time})
	} else {
		b.Omitted++
	}
}

// Due removes and returns the batches whose window has passed at now,
// oldest first, their items in time order.
func (d *Debouncer) Due(now time.Time) []Batch {
	var out []Batch
	keep := d.order[:0]
	for _, k := range d.order {
		b := d.open[k]
		if now.Sub(b.First) < d.Window {
			keep = append(keep, k)
			continue
		}
		out = append(out, sorted(*b))
		delete(d.open, k)
		delete(d.changed, k)
	}
	d.order = keep
	return out
}

// Changed returns a copy of every open batch that gained occurrences since
// it last did, oldest first, its items in time order.
func (d *Debouncer) Changed() []Batch {
	var out []Batch
	for _, k := range d.order {
		if d.changed[k] {
			b := *d.open[k]
			b.Items = append([]Item(nil), b.Items...)
			out = append(out, sorted(b))
			delete(d.changed, k)
		}
	}
	return out
}

func sorted(b Batch) Batch {
	sort.SliceStable(b.Items, func(i, j int) bool { return b.Items[i].Time.Before(b.Items[j].Time) })
	return b
}

// Next is when the oldest open batch is due; ok is false when none is open.
func (d *Debouncer) Next() (at time.Time, ok bool) {
	for _, k := range d.order {
		b := d.open[k]
		if t := b.First.Add(d.Window); !ok || t.Before(at) {
			at, ok = t, true
		}
	}
	return at, ok
}
