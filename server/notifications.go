package server

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/internal/attributes"
	"github.com/myriarch/myriarch/server/estate"
	"github.com/myriarch/myriarch/server/metrics"
	"github.com/myriarch/myriarch/server/notify"
	"github.com/myriarch/myriarch/server/offers"
	"github.com/myriarch/myriarch/server/registry"
)

// agentEvents are the agent events that are notification events: each is
// recorded once across the instances, where it is observed.
var agentEvents = map[string]string{
	"offer_" + offers.Failed:         estate.EventOfferFailed,
	"config_failed":                  estate.EventConfigFailed,
	"config_warning":                 estate.EventConfigWarning,
	"pairing_ambiguous":              estate.EventPairingAmbiguous,
	offers.EventSelfUpdateRolledBack: estate.EventSelfUpdateRolledBack,
}

// notifications is the part that tells the estate's webhooks what happens
// (server/notify), and watches for collectors offline longer than their
// fleet's offlineAfter.
type notifications struct {
	*notify.Notifier
	offline offlineWatch
	stop    chan struct{}
	done    sync.WaitGroup
}

// leads reports whether this instance decides (the only one, or the
// cluster's leader).
func (s *Server) leads() bool { return s.leader == nil || s.leader.Leading() }

func (s *Server) startNotifications(context.Context) error {
	n := &notifications{stop: make(chan struct{})}
	n.Notifier = notify.New(notify.Config{Store: s.store, Window: s.opts.NotificationWindow, Poll: s.opts.notificationPoll(),
		Leads: s.leads, FleetOf: s.notificationFleet, Log: s.log.With("component", "notify"),
		Sender: notify.SenderSettings{Backoff: s.opts.notifyBackoff}})
	s.notify = n
	s.registry.OnEvent(func(uid uuid.UUID, typ, msg string, at time.Time) {
		if ev, ok := agentEvents[typ]; ok {
			n.Add(notify.Occurrence{Event: ev, Agent: uid.String(), Message: msg, Time: at})
		}
	})
	notify.Routes(s.admin, s.store)
	n.Start()
	n.done.Add(1)
	go func() {
		defer n.done.Done()
		s.watchOffline(n)
	}()
	return nil
}

func (s *Server) stopNotifications(context.Context) error {
	close(s.notify.stop)
	s.notify.done.Wait()
	return s.notify.Close()
}

// notifyRollout is the rollouts' Notice.
func (s *Server) notifyRollout(event, fleet, msg string) {
	s.notify.Add(notify.Occurrence{Event: event, Fleet: fleet, Message: msg})
}

// notificationFleet names the fleet of an agent: a collector's, or for an
// updater the fleet of the collector it is linked to.
func (s *Server) notificationFleet(agent string) string {
	uid, err := uuid.Parse(agent)
	if err != nil {
		return ""
	}
	if a, ok := s.registry.Peek(uid); ok && a.Kind == registry.KindUpdater && s.offers != nil {
		if col, ok := s.offers.LinkedCollector(uid); ok {
			uid = col
		}
	}
	return s.fleetOfAgent(uid)
}

// offlineWatch is what the offline watch last found; guarded by mu.
type offlineWatch struct {
	mu      sync.Mutex
	byFleet map[string]int // collectors offline longer than offlineAfter, per fleet with one
	// scanned is when the watch last looked while this instance led (zero:
	// it did not): a collector is notified when its offlineAfter ends
	// between two looks, so once, by the instance leading then.
	scanned time.Time
}

// OfflineCounts returns the collectors offline longer than their fleet's
// offlineAfter, per fleet that sets one.
func (s *Server) OfflineCounts() map[string]int {
	if s.notify == nil {
		return nil
	}
	w := &s.notify.offline
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]int, len(w.byFleet))
	for k, v := range w.byFleet {
		out[k] = v
	}
	return out
}

// watchOffline looks for offline collectors at a quarter of the shortest
// offlineAfter (between 250 ms and 30 s) until the part stops.
func (s *Server) watchOffline(n *notifications) {
	for {
		wait := s.scanOffline(&n.offline, time.Now())
		select {
		case <-n.stop:
			return
		case <-time.After(wait):
		}
	}
}

// scanOffline counts the collectors offline longer than their fleet's
// offlineAfter and, where this instance leads, notifies those whose
// offlineAfter ended since the last look; it returns when to look again.
func (s *Server) scanOffline(w *offlineWatch, now time.Time) time.Duration {
	s.estateMu.Lock()
	est := s.estate
	s.estateMu.Unlock()
	shortest := time.Duration(0)
	byFleet := map[string]int{}
	if est != nil {
		for _, f := range est.Fleets {
			if f.OfflineAfter > 0 {
				byFleet[f.Name] = 0
				if shortest == 0 || f.OfflineAfter < shortest {
					shortest = f.OfflineAfter
				}
			}
		}
	}
	leads := s.leads()
	w.mu.Lock()
	since := w.scanned
	w.mu.Unlock()
	var crossed []notify.Occurrence
	if shortest > 0 {
		s.registry.EachOffline(registry.KindCollector, now, func(uid uuid.UUID, view attributes.View, lastSeen time.Time) {
			f, err := est.FleetFor(view)
			if err != nil || f == nil || f.OfflineAfter <= 0 {
				return
			}
			ends := lastSeen.Add(f.OfflineAfter)
			if ends.After(now) {
				return
			}
			byFleet[f.Name]++
			if leads && !since.IsZero() && ends.After(since) {
				crossed = append(crossed, notify.Occurrence{Event: estate.EventAgentOffline, Fleet: f.Name, Agent: uid.String(), Time: now,
					Message: fmt.Sprintf("offline since %s (the fleet's offlineAfter is %s)", lastSeen.UTC().Format(time.RFC3339), f.OfflineAfter)})
			}
		})
	}
	for _, o := range crossed {
		s.notify.Add(o)
	}
	w.mu.Lock()
	w.byFleet = byFleet
	w.scanned = time.Time{}
	if leads {
		w.scanned = now
	}
	w.mu.Unlock()
	return min(max(shortest/4, 250*time.Millisecond), 30*time.Second)
}

// notificationPoll is how often the notifier gathers and sends: a tenth of
// the window, between 50 ms and 1 s.
func (o *Options) notificationPoll() time.Duration {
	w := o.NotificationWindow
	if w <= 0 {
		w = notify.DefaultWindow
	}
	return min(max(w/10, 50*time.Millisecond), time.Second)
}

// notificationMetrics samples the notifier and the outbox for /metrics.
func (s *Server) notificationMetrics() *metrics.Notifications {
	return &metrics.Notifications{
		Stats: func() notify.Stats {
			if s.notify == nil {
				return notify.Stats{}
			}
			return s.notify.Stats()
		},
		Queued: func() (int, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			return s.store.PendingDeliveries(ctx)
		},
		Webhooks: func() []string {
			s.estateMu.Lock()
			defer s.estateMu.Unlock()
			if s.estate == nil {
				return nil
			}
			names := make([]string, 0, len(s.estate.Webhooks))
			for _, w := range s.estate.Webhooks {
				names = append(names, w.Name)
			}
			return names
		},
	}
}
