//go:build linux

package main

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// wsPeer upgrades every request, answers each message with an empty frame
// and can drop every connection it holds.
type wsPeer struct {
	srv   *httptest.Server
	mu    sync.Mutex
	conns []*websocket.Conn // guarded by mu
}

func newWSPeer(t *testing.T) *wsPeer {
	p := &wsPeer{}
	up := websocket.Upgrader{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		p.mu.Lock()
		p.conns = append(p.conns, c)
		p.mu.Unlock()
		for {
			if _, _, err := c.ReadMessage(); err != nil {
				return
			}
			if err := c.WriteMessage(websocket.BinaryMessage, []byte{0}); err != nil {
				return
			}
		}
	}))
	t.Cleanup(func() { p.drop(); p.srv.Close() })
	return p
}

func (p *wsPeer) url() string { return "ws" + strings.TrimPrefix(p.srv.URL, "http") }

func (p *wsPeer) drop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// The agents connected to each instance are counted as sockets open and
// close, without visiting every agent.
func TestPerInstanceFollowsSockets(t *testing.T) {
	a, b := newWSPeer(t), newWSPeer(t)
	cfg := config{agents: 8, hosts: 4, dialConcurrency: 4, sourceAddrs: 2, heartbeat: time.Minute,
		readTimeout: time.Minute, backoffBase: time.Hour, backoffCap: time.Hour,
		fromVersion: "0.149.0", transport: "ws"}
	s := newSim(cfg, []string{a.url(), b.url()}, "t", nil)
	for _, ag := range s.agents {
		s.connect(ag)
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.st.connected.Load() != 8 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := s.perInstance(); !slices.Equal(got, []int{4, 4}) {
		t.Fatalf("8 agents over 2 instances counted as %v", got)
	}
	s.stopping.Store(true) // no reconnects
	a.drop()
	for s.perInstance()[0] != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := s.perInstance(); !slices.Equal(got, []int{0, 4}) {
		t.Fatalf("after the first instance dropped its sockets: %v, want [0 4]", got)
	}
	b.drop()
	s.pending.Wait()
	if got := s.perInstance(); !slices.Equal(got, []int{0, 0}) {
		t.Fatalf("after both dropped their sockets: %v", got)
	}
}
