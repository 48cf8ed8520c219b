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
	return q, ""
}

// listAgents streams {"agents": [...]} (plus "next" when a limited page is
// followed by more agents) chunk by chunk, in the bytes WriteJSON would
// produce for the whole list at once.
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
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	buf := make([]byte, 0, flushAt+flushAt/2)
	buf = append(buf, "{\n  \"agents\": ["...)
	pq := registry.PageQuery{Kind: q.kind, After: q.after, HasAfter: q.hasAfter, WithEvents: true}
	n, more := 0, false
	js := make([]*Agent, 0, listChunk)
	var scratch []keyValue
	for {
		pq.Limit = listChunk
		if q.limit > 0 {
			pq.Limit = min(listChunk, q.limit-n)
		}
		var page []registry.Agent
		page, more = a.d.Registry.Page(pq)
		if len(page) > 0 {
			// The next chunk starts after the last agent examined, kept or not.
			pq.After, pq.HasAfter = page[len(page)-1].UID, true
		}
		page = keep(page, preds)
		js = a.render(page, js[:0])
		for _, j := range js {
			if n > 0 {
				buf = append(buf, ',')
			}
			n++
			buf = newline(buf, 2)
			buf = appendAgent(buf, j, 2, &scratch)
			if len(buf) >= flushAt {
				if _, err := w.Write(buf); err != nil {
					return // the client went away
				}
				buf = buf[:0]
			}
		}
		if !more || (q.limit > 0 && n >= q.limit) {
			break
		}
	}
	if n > 0 {
		buf = newline(buf, 1)
	}
	buf = append(buf, ']')
	if q.limit > 0 && more {
		buf = append(buf, ",\n  \"next\": "...)
		buf = appendString(buf, pq.After.String())
	}
	buf = append(buf, "\n}\n"...)
	_, _ = w.Write(buf)
}

// render turns snapshots into their JSON form, decorated, appending to js.
func (a *API) render(page []registry.Agent, js []*Agent) []*Agent {
	for i := range page {
		js = append(js, toJSON(&page[i], a.d.Tokens.TokenName, nil))
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
