package admin

import (
	"net/http"
	"strconv"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/server/registry"
)

// MaxPageLimit bounds the limit parameter of GET /api/v1/agents.
const MaxPageLimit = 10000

// listChunk is how many agents a listing snapshots, decorates and renders
// at a time: the registry's read lock and the decorators' locks are held for
// one chunk only, and memory stays bounded however large the estate.
const listChunk = 500

// flushAt is the rendered size after which a listing writes what it has.
const flushAt = 128 << 10

// BatchDecorator is a Decorator that can decorate many agents under one
// acquisition of its own lock; listings prefer it.
type BatchDecorator interface {
	Decorator
	DecorateBatch(as []registry.Agent, js []*Agent)
}

// listQuery is a parsed GET /api/v1/agents.
type listQuery struct {
	kind     registry.Kind
	limit    int // 0: everything
	after    uuid.UUID
	hasAfter bool
	noEvents bool // events=false: histories left out (empty)
}

// parseListQuery validates kind, limit and after; the message names the
// parameter and the value it refuses.
func parseListQuery(r *http.Request) (listQuery, string) {
	var q listQuery
	v := r.URL.Query()
	q.kind = registry.Kind(v.Get("kind"))
	switch q.kind {
	case "", registry.KindCollector, registry.KindUpdater, registry.KindBridge, registry.KindUnknown:
	default:
		return q, "kind must be one of collector, updater, bridge, unknown"
	}
	if vals, ok := v["limit"]; ok {
		n, err := strconv.Atoi(vals[0])
		if err != nil || n < 1 || n > MaxPageLimit || len(vals) > 1 {
			return q, "limit must be a single integer from 1 to " + strconv.Itoa(MaxPageLimit) + ", got " + strconv.Quote(vals[len(vals)-1])
		}
		q.limit = n
	}
	if vals, ok := v["after"]; ok {
		u, err := uuid.Parse(vals[0])
		if err != nil || len(vals) > 1 {
			return q, "after must be a single instance UID (a UUID), got " + strconv.Quote(vals[len(vals)-1])
		}
		q.after, q.hasAfter = u, true
	}
	if vals, ok := v["events"]; ok {
		if len(vals) > 1 || (vals[0] != "true" && vals[0] != "false") {
			return q, "events must be true or false, got " + strconv.Quote(vals[len(vals)-1])
		}
		q.noEvents = vals[0] == "false"
	}
	return q, ""
}

// listAgents streams {"agents": [...]} (plus "next" when a limited page is
// followed by more agents) chunk by chunk, in the bytes WriteJSON would
// produce for the whole list at once. With sort or offset it answers a
// sorted page instead (see listSorted).
func (a *API) listAgents(w http.ResponseWriter, r *http.Request) {
	q, bad := parseListQuery(r)
	if bad != "" {
		WriteError(w, http.StatusBadRequest, bad)
		return
	}
	preds, bad := a.listFilters(r)
	if bad != "" {
		WriteError(w, http.StatusBadRequest, bad)
		return
	}
	sq, sorted, bad := parseSortQuery(r, q)
	if bad != "" {
		WriteError(w, http.StatusBadRequest, bad)
		return
	}
	if sorted {
		a.listSorted(w, q, sq, preds)
		return
	}
	lw := a.newListWriter(w)
	pq := registry.PageQuery{Kind: q.kind, After: q.after, HasAfter: q.hasAfter, WithEvents: !q.noEvents}
	more := false
	for {
		pq.Limit = listChunk
		if q.limit > 0 {
			pq.Limit = min(listChunk, q.limit-lw.n)
		}
		var page []registry.Agent
		page, more = a.d.Registry.Page(pq)
		if len(page) > 0 {
			// The next chunk starts after the last agent examined, kept or not.
			pq.After, pq.HasAfter = page[len(page)-1].UID, true
		}
		if !lw.add(keep(page, preds)) {
			return // the client went away
		}
		if !more || (q.limit > 0 && lw.n >= q.limit) {
			break
		}
	}
	var tail []byte
	if q.limit > 0 && more {
		tail = append(tail, ",\n  \"next\": "...)
		tail = appendString(tail, pq.After.String())
	}
	lw.finish(tail)
}

// listWriter streams the agents array of a listing, flushing as it grows.
type listWriter struct {
	a       *API
	w       http.ResponseWriter
	buf     []byte
	n       int // agents written
	js      []*Agent
	scratch []keyValue
}

func (a *API) newListWriter(w http.ResponseWriter) *listWriter {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	lw := &listWriter{a: a, w: w, buf: make([]byte, 0, flushAt+flushAt/2), js: make([]*Agent, 0, listChunk)}
	lw.buf = append(lw.buf, "{\n  \"agents\": ["...)
	return lw
}

// add renders and decorates page; false when the client went away.
func (lw *listWriter) add(page []registry.Agent) bool {
	lw.js = lw.a.render(page, lw.js[:0])
	for _, j := range lw.js {
		if lw.n > 0 {
			lw.buf = append(lw.buf, ',')
		}
		lw.n++
		lw.buf = newline(lw.buf, 2)
		lw.buf = appendAgent(lw.buf, j, 2, &lw.scratch)
		if len(lw.buf) >= flushAt {
			if _, err := lw.w.Write(lw.buf); err != nil {
				return false
			}
			lw.buf = lw.buf[:0]
		}
	}
	return true
}

// finish closes the array, adds the members in tail (",\n  \"key\": value"…)
// and closes the document.
func (lw *listWriter) finish(tail []byte) {
	if lw.n > 0 {
		lw.buf = newline(lw.buf, 1)
	}
	lw.buf = append(lw.buf, ']')
	lw.buf = append(lw.buf, tail...)
	lw.buf = append(lw.buf, "\n}\n"...)
	_, _ = lw.w.Write(lw.buf)
}

// render turns snapshots into their JSON form, decorated, appending to js.
func (a *API) render(page []registry.Agent, js []*Agent) []*Agent {
	for i := range page {
		js = append(js, toListJSON(&page[i], a.d.Tokens.TokenName, nil))
	}
	for _, d := range a.decorators {
		if bd, ok := d.(BatchDecorator); ok {
			bd.DecorateBatch(page, js)
			continue
		}
		for i := range page {
			d.Decorate(&page[i], js[i])
		}
	}
	return js
}
