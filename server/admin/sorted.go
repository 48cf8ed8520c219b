package admin

import (
	"cmp"
	"encoding/binary"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/server/registry"
)

// Sort keys of GET /api/v1/agents?sort=KEY (or -KEY, descending).
var sortKeys = []string{"uid", "host", "kind", "version", "online", "lastSeen", "firstSeen"}

// maxOffset bounds the offset parameter.
const maxOffset = 1 << 30

// sortChunk is how many agents a sorted listing examines per read lock.
const sortChunk = 2000

// sortQuery is the sorted-page part of a listing.
type sortQuery struct {
	key    string
	desc   bool
	offset int
}

// parseSortQuery reads sort and offset. Either one asks for a sorted page:
// every matching agent is ordered (ties by instance UID), the page starts at
// offset and the answer carries "total", the number of matching agents.
func parseSortQuery(r *http.Request, q listQuery) (sortQuery, bool, string) {
	v := r.URL.Query()
	sq := sortQuery{key: "uid"}
	_, hasSort := v["sort"]
	_, hasOffset := v["offset"]
	if !hasSort && !hasOffset {
		return sq, false, ""
	}
	if vals := v["sort"]; hasSort {
		key, desc := strings.CutPrefix(vals[0], "-")
		if len(vals) > 1 || !slices.Contains(sortKeys, key) {
			return sq, false, "sort must be one of " + strings.Join(sortKeys, ", ") + " (a leading - sorts descending), got " + strconv.Quote(vals[len(vals)-1])
		}
		sq.key, sq.desc = key, desc
	}
	if vals := v["offset"]; hasOffset {
		n, err := strconv.Atoi(vals[0])
		if err != nil || n < 0 || n > maxOffset || len(vals) > 1 {
			return sq, false, "offset must be a single integer from 0 to " + strconv.Itoa(maxOffset) + ", got " + strconv.Quote(vals[len(vals)-1])
		}
		sq.offset = n
	}
	if q.hasAfter {
		return sq, false, "after pages in instance UID order and cannot be combined with sort or offset"
	}
	return sq, true, ""
}

// sortEntry is what a sorted listing keeps of each matching agent. pfx
// holds the first 16 bytes of s, so most string comparisons stay within the
// entries instead of reading strings all over the heap.
type sortEntry struct {
	uid uuid.UUID
	s   string
	pfx [2]uint64
	n   int64
}

func entryOf(a *registry.Agent, key string) sortEntry {
	e := sortEntry{uid: a.UID}
	switch key {
	case "host":
		e.s = a.Host
		e.pfx = prefixKey(e.s)
	case "kind":
		e.s = string(a.Kind)
		e.pfx = prefixKey(e.s)
	case "version":
		e.s = a.Attributes.Value(attrVersion)
	case "online":
		if a.Online {
			e.n = 1
		}
	case "lastSeen":
		e.n = a.LastSeen.UnixNano()
	case "firstSeen":
		e.n = a.FirstSeen.UnixNano()
	}
	return e
}

func (sq sortQuery) compare(x, y sortEntry) int {
	c := 0
	switch sq.key {
	case "version":
		c = naturalCompare(x.s, y.s)
	case "host", "kind":
		c = cmp.Compare(x.pfx[0], y.pfx[0])
		if c == 0 {
			c = cmp.Compare(x.pfx[1], y.pfx[1])
		}
		if c == 0 {
			c = strings.Compare(x.s, y.s)
		}
	case "online", "lastSeen", "firstSeen":
		c = cmp.Compare(x.n, y.n)
	}
	if c == 0 {
		c = compareUIDs(x.uid, y.uid)
	}
	if sq.desc {
		return -c
	}
	return c
}

// prefixKey packs the first 16 bytes of s big-endian (zero padded):
// comparing keys compares those bytes as strings.Compare would.
func prefixKey(s string) [2]uint64 {
	var b [16]byte
	copy(b[:], s)
	return [2]uint64{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])}
}

func compareUIDs(a, b uuid.UUID) int { return strings.Compare(string(a[:]), string(b[:])) }

// naturalCompare orders strings with their digit runs compared as numbers,
// so 0.99.0 sorts before 0.149.0.
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := isDigit(a[0]), isDigit(b[0])
		if da && db {
			na, ra := digitRun(a)
			nb, rb := digitRun(b)
			na, nb = strings.TrimLeft(na, "0"), strings.TrimLeft(nb, "0")
			if c := cmp.Compare(len(na), len(nb)); c != 0 {
				return c
			}
			if c := strings.Compare(na, nb); c != 0 {
				return c
			}
			a, b = ra, rb
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func digitRun(s string) (run, rest string) {
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return s[:i], s[i:]
}

// listSorted answers a sorted page: {"agents": [...], "total": N}. It walks
// every agent a chunk at a time (the registry's read lock held per chunk),
// keeps the sort key of those that match, sorts them and renders only the
// page, with histories, decorated as any listing.
func (a *API) listSorted(w http.ResponseWriter, q listQuery, sq sortQuery, preds []func(*registry.Agent) bool) {
	entries := make([]sortEntry, 0, a.d.Registry.Len())
	pq := registry.PageQuery{Kind: q.kind, Limit: sortChunk}
	buf := make([]registry.Agent, 0, sortChunk)
	for {
		page, more := a.d.Registry.AppendPage(buf[:0], pq)
		if len(page) > 0 {
			pq.After, pq.HasAfter = page[len(page)-1].UID, true
		}
		for i := range keep(page, preds) {
			entries = append(entries, entryOf(&page[i], sq.key))
		}
		buf = page
		if !more {
			break
		}
	}
	slices.SortFunc(entries, sq.compare)
	total := len(entries)
	from, to := min(sq.offset, total), total
	if q.limit > 0 {
		to = min(from+q.limit, total)
	}
	lw := a.newListWriter(w)
	get := a.d.Registry.Get
	if q.noEvents {
		get = a.d.Registry.Peek
	}
	chunk := make([]registry.Agent, 0, listChunk)
	for i := from; i < to; i += listChunk {
		chunk = chunk[:0]
		for _, e := range entries[i:min(i+listChunk, to)] {
			if ag, ok := get(e.uid); ok {
				chunk = append(chunk, ag)
			}
		}
		if !lw.add(chunk) {
			return
		}
	}
	lw.finish(append([]byte(",\n  \"total\": "), strconv.Itoa(total)...))
}
