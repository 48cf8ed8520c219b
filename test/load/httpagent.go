//go:build linux

package main

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"time"

	"math/rand/v2"

	"github.com/open-telemetry/opamp-go/protobufs"
	"google.golang.org/protobuf/proto"
)

// Plain-HTTP transport: an agent is a poll every heartbeat, not a socket.
// A fixed pool of workers sends every agent's requests over a few
// keep-alive connections, so N agents cost no descriptors and no goroutines.
// Each agent belongs to one worker, so its requests go one at a time and in
// order, as an opamp-go HTTP client sends them.

type httpJob struct {
	a       *agent
	body    []byte
	full    bool // carries the agent's full state
	attempt bool // is the agent's pending (re)connection attempt
}

func (s *sim) startHTTP() {
	s.httpQ = make([]chan httpJob, s.cfg.httpWorkers)
	s.httpClient = &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			MaxConnsPerHost:     s.cfg.httpWorkers,
			MaxIdleConnsPerHost: s.cfg.httpWorkers,
			IdleConnTimeout:     time.Minute,
		},
	}
	for i := range s.httpQ {
		q := make(chan httpJob, len(s.agents)/s.cfg.httpWorkers+64)
		s.httpQ[i] = q
		s.pending.Add(1)
		go func() {
			defer s.pending.Done()
			for j := range q {
				s.post(j)
			}
		}()
	}
}

// enqueue queues one AgentToServer of a (caller holds a.mu).
func (s *sim) enqueue(a *agent, m *protobufs.AgentToServer, full bool) bool {
	return s.enqueueJob(a, m, full, false)
}

func (s *sim) enqueueJob(a *agent, m *protobufs.AgentToServer, full, attempt bool) bool {
	if s.stopping.Load() {
		return false
	}
	a.seq++
	m.SequenceNum = a.seq
	body, err := proto.Marshal(m)
	if err != nil {
		return false
	}
	select {
	case s.httpQ[a.idx%len(s.httpQ)] <- httpJob{a: a, body: body, full: full, attempt: attempt}:
		s.st.sent.Add(1)
		return true
	default:
		s.st.queueFull.Add(1)
		a.seq--          // never sent: no gap for the server to see
		a.everUp = false // the next message that goes out carries the full state
		return false
	}
}

func (s *sim) post(j httpJob) {
	a := j.a
	if s.stopping.Load() {
		return
	}
	req, _ := http.NewRequest(http.MethodPost, s.httpURL, bytes.NewReader(j.body))
	req.Header.Set("Authorization", s.header.Get("Authorization"))
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := s.httpClient.Do(req)
	var data []byte
	if err == nil {
		data, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if err != nil || resp.StatusCode != http.StatusOK {
		delay := s.backoff(a.failHTTP())
		if err != nil {
			s.st.dialErrors.Add(1)
		} else {
			switch resp.StatusCode {
			case http.StatusServiceUnavailable, http.StatusTooManyRequests:
				if resp.StatusCode == http.StatusTooManyRequests {
					s.st.refused429.Add(1)
				} else {
					s.st.refused503.Add(1)
				}
				if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && ra > 0 {
					base := time.Duration(ra) * time.Second
					delay = base + time.Duration(rand.N(int64(base)))
				}
			default:
				s.st.refusedOther.Add(1)
			}
		}
		if j.attempt {
			s.schedule(a, delay)
		} else {
			s.connectLater(a, delay)
		}
		return
	}
	s.st.received.Add(1)
	a.mu.Lock()
	if j.attempt {
		a.dialPending = false
	}
	a.attempt = 0
	wasUp := a.httpUp
	a.httpUp = true
	if j.full {
		a.everUp = true
	}
	version := a.version
	a.mu.Unlock()
	if !wasUp {
		s.st.connected.Add(1)
	}
	if j.full && !a.updater {
		a.versionReported(version)
	}
	var m protobufs.ServerToAgent
	if err := proto.Unmarshal(data, &m); err != nil {
		s.st.badFrames.Add(1)
		return
	}
	a.handle(&m)
}

// failHTTP marks a down after a failed poll and returns its attempt count.
func (a *agent) failHTTP() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.httpUp {
		a.httpUp = false
		a.s.st.connected.Add(-1)
		a.s.st.disconnects.Add(1)
	}
	a.attempt++
	return a.attempt
}

// connectHTTP sends the first poll (full state unless the server has it).
func (s *sim) connectHTTP(a *agent) {
	a.mu.Lock()
	full := !a.everUp
	m := a.compact()
	if full {
		m = a.fullState()
	}
	ok := s.enqueueJob(a, m, full, true)
	a.mu.Unlock()
	if !ok {
		s.schedule(a, s.backoff(1)) // queue full: try again later
	}
}
