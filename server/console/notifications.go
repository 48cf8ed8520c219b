package console

import (
	"net/http"
	"net/url"
	"time"

	"github.com/myriarch/myriarch/server/notify"
)

// What the notifications page shows: every delivery, the failed ones
// (their last attempt failed, delivered since or not), or those pending.
// Each choice's value is also the API's filter set to true.
var notificationShows = []struct{ value, label string }{
	{"", "All deliveries"},
	{"failed", "Failed attempts"},
	{"pending", "Not delivered yet"},
}

type deliveryRow struct {
	notify.DeliveryJSON
	Short string // the creation time to the second
	Class string // ok, bad or pending
}

type notificationsData struct {
	Webhook string
	Shows   []option
	Rows    []deliveryRow
}

// notifications shows the outbox through GET /api/v1/notifications/deliveries.
func (c *Console) notifications(w http.ResponseWriter, r *http.Request, s *session) {
	q := r.URL.Query()
	d := notificationsData{Webhook: q.Get("webhook")}
	api := url.Values{"limit": {"200"}}
	if d.Webhook != "" {
		api.Set("webhook", d.Webhook)
	}
	show := q.Get("show")
	for _, sh := range notificationShows {
		d.Shows = append(d.Shows, option{Value: sh.value, Label: sh.label, Selected: sh.value == show})
		if sh.value == show && sh.value != "" {
			api.Set(sh.value, "true")
		}
	}
	var got notify.DeliveriesJSON
	if err := c.api.get(r.Context(), "/api/v1/notifications/deliveries?"+api.Encode(), &got); err != nil {
		c.failAPI(w, r, s, err)
		return
	}
	for _, dl := range got.Deliveries {
		row := deliveryRow{DeliveryJSON: dl, Short: dl.Created.UTC().Format(time.DateTime), Class: "pending"}
		switch dl.State {
		case notify.StateDelivered:
			row.Class = "ok"
		case notify.StateGivenUp:
			row.Class = "bad"
		}
		d.Rows = append(d.Rows, row)
	}
	c.render(w, r, http.StatusOK, "notifications", view{Title: "Notifications", Nav: "notifications", CSRF: s.csrf, Data: d})
}
