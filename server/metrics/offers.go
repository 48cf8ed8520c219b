package metrics

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/myriarch/myriarch/server/offers"
)

var offersDesc = prometheus.NewDesc("myriarch_offers",
	"Collectors assigned to a fleet, by offer state.", []string{"state"}, nil)

// offerStates are reported even when no collector is in them, so a state
// reads 0 rather than disappearing.
var offerStates = []string{
	offers.UpToDate, offers.WaitingWave, offers.Offered, offers.Downloading, offers.Installing,
	offers.Installed, offers.Failed, offers.HeldAmbiguous, offers.NoUpdater, offers.NoArtifact, offers.Paused,
}

type offersCollector struct{ fn func() map[string]int }

func (c *offersCollector) Describe(ch chan<- *prometheus.Desc) { ch <- offersDesc }

func (c *offersCollector) Collect(ch chan<- prometheus.Metric) {
	counts := c.fn()
	if counts == nil {
		return
	}
	for st, n := range counts {
		ch <- prometheus.MustNewConstMetric(offersDesc, prometheus.GaugeValue, float64(n), validUTF8(st))
	}
}

// FleetOfferStates counts collectors by offer state. The offers engine
// keeps these counts per fleet and wave as states change and publishes them
// on the admin API's GET /api/v1/fleets (rollout.waves[].states); reading
// them there, in process, costs per fleet and wave, not per agent. admin is
// the admin API handler, token its bearer token.
func FleetOfferStates(admin http.Handler, token string) (map[string]int, error) {
	req, err := http.NewRequest(http.MethodGet, "/api/v1/fleets", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	w := &memResponse{header: http.Header{}}
	admin.ServeHTTP(w, req)
	if w.status != http.StatusOK {
		return nil, fmt.Errorf("GET /api/v1/fleets: status %d: %s", w.status, bytes.TrimSpace(w.body.Bytes()))
	}
	var body struct {
		Fleets []offers.FleetJSON `json:"fleets"`
	}
	if err := json.Unmarshal(w.body.Bytes(), &body); err != nil {
		return nil, fmt.Errorf("GET /api/v1/fleets: %w", err)
	}
	out := make(map[string]int, len(offerStates))
	for _, st := range offerStates {
		out[st] = 0
	}
	for _, f := range body.Fleets {
		for _, wave := range f.Rollout.Waves {
			for st, n := range wave.States {
				out[st] += n
			}
		}
	}
	return out, nil
}

// memResponse keeps an in-process response in memory.
type memResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (m *memResponse) Header() http.Header { return m.header }

func (m *memResponse) WriteHeader(code int) {
	if m.status == 0 {
		m.status = code
	}
}

func (m *memResponse) Write(b []byte) (int, error) {
	m.WriteHeader(http.StatusOK)
	return m.body.Write(b)
}
