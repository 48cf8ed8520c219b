package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/myriarch/myriarch/server/estate"
	"github.com/myriarch/myriarch/server/notify"
)

// Notification metrics: labelled by event or webhook, both bounded (the
// event names are fixed, the webhooks are the estate's).
var (
	notifyEventsDesc = prometheus.NewDesc("myriarch_notification_events_total",
		"Occurrences of notification events this instance observed.", []string{"event"}, nil)
	notifyDroppedDesc = prometheus.NewDesc("myriarch_notification_events_dropped_total",
		"Occurrences not kept because too many were waiting to be gathered.", nil, nil)
	notifyQueuedDesc = prometheus.NewDesc("myriarch_notifications_queued",
		"Webhook deliveries in the store not delivered or given up yet.", nil, nil)
	notifyDeliveredDesc = prometheus.NewDesc("myriarch_notifications_delivered_total",
		"Webhook deliveries this instance delivered (a 2xx answer).", []string{"webhook"}, nil)
	notifyFailedDesc = prometheus.NewDesc("myriarch_notifications_failed_total",
		"Webhook delivery attempts by this instance that failed and will be retried.", []string{"webhook"}, nil)
	notifyGivenUpDesc = prometheus.NewDesc("myriarch_notifications_given_up_total",
		"Webhook deliveries this instance gave up (24 h of failures, or the webhook left the estate).", []string{"webhook"}, nil)
)

// Notifications samples the notifier.
type Notifications struct {
	Stats func() notify.Stats
	// Queued counts the deliveries not settled; an error leaves the gauge out.
	Queued func() (int, error)
	// Webhooks names the estate's webhooks, reported at 0 before any delivery.
	Webhooks func() []string
}

func notificationsCollector(n Notifications) prometheus.Collector {
	return &sampled{descs: []*prometheus.Desc{notifyEventsDesc, notifyDroppedDesc, notifyQueuedDesc, notifyDeliveredDesc, notifyFailedDesc, notifyGivenUpDesc},
		collect: func(ch chan<- prometheus.Metric) {
			st := n.Stats()
			for _, ev := range estate.NotificationEvents {
				ch <- counter(notifyEventsDesc, float64(st.Events[ev]), ev)
			}
			ch <- counter(notifyDroppedDesc, float64(st.Dropped))
			if q, err := n.Queued(); err == nil {
				ch <- gauge(notifyQueuedDesc, float64(q))
			}
			hooks := map[string]bool{}
			for _, w := range n.Webhooks() {
				hooks[w] = true
			}
			for _, m := range []map[string]uint64{st.Delivered, st.Failed, st.GivenUp} {
				for w := range m {
					hooks[w] = true
				}
			}
			for w := range hooks {
				ch <- counter(notifyDeliveredDesc, float64(st.Delivered[w]), w)
				ch <- counter(notifyFailedDesc, float64(st.Failed[w]), w)
				ch <- counter(notifyGivenUpDesc, float64(st.GivenUp[w]), w)
			}
		}}
}
