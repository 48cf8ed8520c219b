package console_test

import (
	"context"
	"html"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/myriarch/myriarch/server/store"
)

var deliveryRowID = regexp.MustCompile(`<tr class="delivery" data-id="([^"]+)">`)

func deliveryIDs(page string) string {
	var ids []string
	for _, m := range deliveryRowID.FindAllStringSubmatch(section(page, "deliveries"), -1) {
		ids = append(ids, m[1])
	}
	return strings.Join(ids, ",")
}

// The notifications page shows the outbox newest first, a failed
// delivery's last error, and filters by webhook and by state.
func TestNotificationsPage(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	t0 := time.Now().UTC().Add(-time.Hour)
	body := []byte(`{}`)
	db := e.srv.Store()
	if _, err := db.PutDeliveries(ctx, []store.Delivery{
		{ID: "d-delivered", Webhook: "ops", Event: "offer_failed", Fleet: "edge", Body: body, Created: t0, NextAt: t0},
		{ID: "d-failing", Webhook: "ops", Event: "rollout_paused", Fleet: "edge", Body: body, Created: t0.Add(time.Minute), NextAt: t0},
		{ID: "d-pager", Webhook: "pager", Event: "agent_offline", Fleet: "core", Body: body, Created: t0.Add(2 * time.Minute), NextAt: t0},
	}); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	due, err := db.DueDeliveries(ctx, store.DueQuery{Now: t0, Webhook: "ops"})
	must(err)
	for _, d := range due {
		if ok, err := db.ClaimDelivery(ctx, d, t0.Add(time.Hour)); !ok || err != nil {
			t.Fatalf("claiming %s: %v %v", d.ID, ok, err)
		}
	}
	must(db.SettleDelivery(ctx, "d-delivered", store.Settlement{Attempt: 1, At: t0, Delivered: true}))
	must(db.SettleDelivery(ctx, "d-failing", store.Settlement{Attempt: 1, At: t0, Err: "HTTP 500: <script>boom</script>", NextAt: t0.Add(2 * time.Hour)}))

	b := e.browser()
	b.login(e.srv.AdminToken())
	for _, tc := range []struct{ query, want string }{
		{"", "d-pager,d-failing,d-delivered"},
		{"?show=failed", "d-failing"},
		{"?show=pending", "d-pager,d-failing"},
		{"?webhook=ops", "d-failing,d-delivered"},
	} {
		resp, page := b.do("GET", "/notifications"+tc.query, nil)
		if resp.StatusCode != 200 || deliveryIDs(page) != tc.want {
			t.Errorf("%q: %d, rows %s, want %s", tc.query, resp.StatusCode, deliveryIDs(page), tc.want)
		}
	}
	_, page := b.do("GET", "/notifications", nil)
	if !strings.Contains(page, `<a href="/notifications" aria-current="page">Notifications</a>`) {
		t.Error("the navigation does not mark the notifications page")
	}
	if strings.Contains(page, "<script>boom") || !strings.Contains(html.UnescapeString(page), "HTTP 500: <script>boom</script>") {
		t.Error("the last error is not shown, escaped")
	}
}
