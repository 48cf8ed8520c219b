package notify

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/store"
)

// Delivery states, as GET /api/v1/notifications/deliveries shows them.
const (
	StatePending   = "pending"   // not attempted yet, or failed and due again
	StateDelivered = "delivered" // a 2xx answer
	StateGivenUp   = "given_up"  // failed until GiveUpAfter, or its webhook is gone
)

// MaxListed bounds a listing.
const MaxListed = 1000

// DeliveryJSON is one delivery in GET /api/v1/notifications/deliveries.
type DeliveryJSON struct {
	ID          string     `json:"id"`
	Webhook     string     `json:"webhook"`
	Event       string     `json:"event"`
	Fleet       string     `json:"fleet"`
	State       string     `json:"state"`
	Created     time.Time  `json:"created"`
	Attempts    int        `json:"attempts"`
	NextAt      *time.Time `json:"nextAt"`
	DeliveredAt *time.Time `json:"deliveredAt"`
	GaveUpAt    *time.Time `json:"gaveUpAt"`
	// LastError is why the last attempt failed ("" when it did not).
	LastError string `json:"lastError"`
	Bytes     int    `json:"bytes"`
}

// DeliveriesJSON is GET /api/v1/notifications/deliveries' answer.
type DeliveriesJSON struct {
	Deliveries []DeliveryJSON `json:"deliveries"`
}

// Lister lists the outbox.
type Lister interface {
	ListDeliveries(ctx context.Context, q store.DeliveryQuery) ([]store.Delivery, error)
}

// Routes adds GET /api/v1/notifications/deliveries: newest first, with
// ?webhook=NAME, ?failed=true (the last attempt failed), ?pending=true
// (not settled yet) and ?limit=N (default 100, at most MaxListed).
func Routes(api *admin.API, l Lister) {
	api.Handle("GET /api/v1/notifications/deliveries", func(w http.ResponseWriter, r *http.Request) {
		q, err := parseQuery(r)
		if err != nil {
			admin.WriteError(w, http.StatusBadRequest, err.Error())
			return
		}
		ds, err := l.ListDeliveries(r.Context(), q)
		if err != nil {
			admin.WriteError(w, http.StatusInternalServerError, "listing deliveries: "+err.Error())
			return
		}
		out := DeliveriesJSON{Deliveries: make([]DeliveryJSON, 0, len(ds))}
		for _, d := range ds {
			out.Deliveries = append(out.Deliveries, ToJSON(d))
		}
		admin.WriteJSON(w, http.StatusOK, out)
	})
}

type queryError string

func (e queryError) Error() string { return string(e) }

func parseQuery(r *http.Request) (store.DeliveryQuery, error) {
	v := r.URL.Query()
	q := store.DeliveryQuery{Webhook: v.Get("webhook"), Limit: 100}
	for name, dst := range map[string]*bool{"failed": &q.Failed, "pending": &q.Pending} {
		if s := v.Get(name); s != "" {
			b, err := strconv.ParseBool(s)
			if err != nil {
				return q, queryError(name + " must be true or false, got " + strconv.Quote(s))
			}
			*dst = b
		}
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxListed {
			return q, queryError("limit must be a number from 1 to " + strconv.Itoa(MaxListed) + ", got " + strconv.Quote(s))
		}
		q.Limit = n
	}
	return q, nil
}

// ToJSON shows d as the API does.
func ToJSON(d store.Delivery) DeliveryJSON {
	j := DeliveryJSON{ID: d.ID, Webhook: d.Webhook, Event: d.Event, Fleet: d.Fleet, Created: d.Created, Attempts: d.Attempts,
		NextAt: timeOrNil(d.NextAt), DeliveredAt: timeOrNil(d.Delivered), GaveUpAt: timeOrNil(d.GaveUp), LastError: d.LastError, Bytes: len(d.Body)}
	switch {
	case !d.Delivered.IsZero():
		j.State = StateDelivered
	case !d.GaveUp.IsZero():
		j.State = StateGivenUp
	default:
		j.State = StatePending
	}
	return j
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
