package attributes

import (
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"
)

// Bounds of the dictionary of repeated values (see dictionary).
const (
	// dictMaxEntries is the most values the dictionary holds; it never
	// forgets one (views refer to them by number), so past it every
	// further value stays in the views that hold it.
	dictMaxEntries = 1 << 16
	// dictMaxBytes bounds the bytes of the values it holds.
	dictMaxBytes = 4 << 20
	// dictMinLen and dictMaxLen bound the length of a value it takes: a
	// shorter one costs no more than its reference, a longer one rarely
	// repeats.
	dictMinLen = 3
	dictMaxLen = 256
	// dictPromoteAt is how often a value is seen, within one window of
	// candidates, before the dictionary takes it.
	dictPromoteAt = 8
	// dictWindow is the most candidates counted at once; when full the
	// counts start over, so values that do not repeat (host names,
	// instance UIDs) cannot keep a repeated one from being counted.
	dictWindow = 16384

	dictChunkBits = 10
	dictChunkLen  = 1 << dictChunkBits
)

// dictionary holds once, for every view of the process, the attribute
// values a fleet repeats ("otelcol-contrib", "linux", OS descriptions,
// versions, site names): a view refers to such a value by its number (one
// to three bytes) instead of holding a copy. A server holds a view of every
// agent of its estate, and these values are most of a view's bytes.
//
// The policy keeps out the values that do not repeat: a value is taken
// only after it was seen dictPromoteAt times while at most dictWindow
// candidates were counted, and the dictionary is bounded in entries and
// bytes. It only grows: a value, once taken, is never removed, since views
// refer to it. When it is full (a fleet with more repeated values than it
// holds, or peers describing themselves again and again with made-up
// values), further values stay in their views, which costs memory and
// changes nothing else.
//
// Safe for concurrent use. A value is written before its number is given
// out, under mu; a reader got the number from a view, built by a goroutine
// that took mu after the write.
type dictionary struct {
	maxEntries, maxBytes int

	mu    sync.Mutex
	ids   map[string]uint32 // guarded by mu; a value taken → its number
	seen  map[uint64]uint8  // guarded by mu; a candidate's hash → times seen in this window
	bytes int               // guarded by mu; bytes of the values taken
	n     int               // guarded by mu; values taken
	seed  maphash.Seed      // set once
	chunk [(dictMaxEntries + dictChunkLen - 1) / dictChunkLen]atomic.Pointer[[dictChunkLen]string]
}

// values is the dictionary of every view of the process.
var values = newDictionary(dictMaxEntries, dictMaxBytes)

func newDictionary(maxEntries, maxBytes int) *dictionary {
	return &dictionary{maxEntries: min(maxEntries, dictMaxEntries), maxBytes: maxBytes,
		ids: map[string]uint32{}, seen: map[uint64]uint8{}, seed: maphash.MakeSeed()}
}

// refs sets, for each value of vals, its number plus one when the
// dictionary holds it (0: it does not), counting the others as candidates
// and taking those seen often enough.
func (d *dictionary) refs(vals []string, refs []uint32) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, v := range vals {
		refs[i] = d.refLocked(v)
	}
}

func (d *dictionary) refLocked(v string) uint32 {
	if len(v) < dictMinLen || len(v) > dictMaxLen {
		return 0
	}
	if id, ok := d.ids[v]; ok {
		return id + 1
	}
	if d.n >= d.maxEntries || d.bytes+len(v) > d.maxBytes {
		return 0
	}
	h := maphash.String(d.seed, v)
	c := d.seen[h] + 1
	if c < dictPromoteAt {
		if len(d.seen) >= dictWindow {
			clear(d.seen)
		}
		d.seen[h] = c
		return 0
	}
	delete(d.seen, h)
	id := uint32(d.n)
	c0 := d.chunk[id>>dictChunkBits].Load()
	if c0 == nil {
		c0 = new([dictChunkLen]string)
		d.chunk[id>>dictChunkBits].Store(c0)
	}
	v = strings.Clone(v) // its own copy: v may be part of a larger string
	c0[id&(dictChunkLen-1)] = v
	d.ids[v] = id
	d.n++
	d.bytes += len(v)
	return id + 1
}

// value is the value numbered id.
func (d *dictionary) value(id uint32) string {
	return d.chunk[id>>dictChunkBits].Load()[id&(dictChunkLen-1)]
}
