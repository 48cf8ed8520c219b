//go:build linux

package attack

import (
	"bytes"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"
)

// TestSlowReaders (finding 4): agents that never read what they are sent
// must not stall the others: their answers queue on their own connection
// and they are dropped, while a healthy agent's round trips stay short.
func TestSlowReaders(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	_, secret := d.token("site")
	healthy := mustWS(t, d, secret)
	uid := uuid.New()
	healthy.register(uid)
	seq := uint64(1)
	rtt := func(n int) []time.Duration {
		var out []time.Duration
		for range n {
			start := time.Now()
			if err := healthy.send(&protobufs.AgentToServer{InstanceUid: uid[:], SequenceNum: seq}); err != nil {
				t.Fatal(err)
			}
			seq++
			if _, err := healthy.recv(30 * time.Second); err != nil {
				t.Fatalf("healthy agent: %v", err)
			}
			out = append(out, time.Since(start))
			time.Sleep(20 * time.Millisecond)
		}
		slices.Sort(out)
		return out
	}
	base := rtt(10)

	// 70 agents that send 8 MiB of pings each and never read the pongs
	// (more than the socket buffers hold); the healthy agent measures its
	// round trips for the 5 s the server takes to work through them.
	flood := bytes.Repeat(frame(0x89, bytes.Repeat([]byte("p"), 125), -1), (8<<20)/131)
	var wg sync.WaitGroup
	for range 70 {
		r := dialRawWith(t, d, secret, notReading)
		wg.Go(func() {
			r.nc.SetWriteDeadline(time.Now().Add(60 * time.Second))
			r.nc.Write(flood)
		})
	}
	var during []time.Duration
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); {
		during = append(during, rtt(1)...)
	}
	wg.Wait()
	slices.Sort(during)
	dropped := d.metric("myriarch_opamp_rejects_total", `reason="send_queue_full"`)
	figure(t, "70 agents sending 8 MiB of pings each without reading the pongs: a healthy agent's round trip p50 %s → %s, max %s; %0.f dropped (send queue full)",
		base[len(base)/2].Round(10*time.Microsecond), during[len(during)/2].Round(10*time.Microsecond), during[len(during)-1].Round(time.Millisecond), dropped)
	// Writes blocked on peers that do not read would hold workers for the
	// write's deadline (1 s for a pong): the healthy agent's round trips
	// then grow by an order of magnitude (compared within this run).
	if b, p := base[len(base)/2], during[len(during)/2]; p > 5*b+5*time.Millisecond {
		t.Errorf("healthy round trip p50 %s while peers did not read, %s before (workers stalled by writes)", p, b)
	}
	if dropped == 0 {
		t.Error("no agent dropped for not reading")
	}
}

// TestUnfinishedFrames (finding 5): frames begun and never finished are
// bounded in time (30 s) and in total (the largest shed past 64 MiB).
func TestUnfinishedFrames(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	_, secret := d.token("site")
	rss0 := d.rss()
	body := make([]byte, 8<<20-1)
	var conns []*rawWS
	peak := rss0
	start := time.Now()
	for range 20 {
		r := dialRaw(t, d, secret)
		conns = append(conns, r)
		r.nc.SetWriteDeadline(time.Now().Add(20 * time.Second))
		r.nc.Write(frame(0x82, nil, 8<<20))
		r.nc.Write(body) // one byte short
		peak = max(peak, d.rss())
	}
	codes := map[int]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, r := range conns {
		wg.Go(func() {
			c := r.closeCode(60 * time.Second)
			mu.Lock()
			codes[c]++
			mu.Unlock()
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		select {
		case <-done:
			break wait
		case <-tick.C:
			peak = max(peak, d.rss())
		}
	}
	all := time.Since(start)
	figure(t, "20 sockets each holding an unfinished 8 MiB frame: RSS %s, peak %s; %d shed (1013), %d timed out (1008), %d other; all closed after %s",
		mib(rss0), mib(peak), codes[1013], codes[1008], 20-codes[1013]-codes[1008], all.Round(time.Second))
	if codes[1013]+codes[1008] != 20 {
		t.Errorf("close codes %v, want 1013 (shed) or 1008 (too slow) for all 20", codes)
	}
	if peak-rss0 > 200<<20 {
		t.Errorf("unfinished frames grew the server by %s (bound 64 MiB held)", mib(peak-rss0))
	}
}

// TestConnectionReplaced (finding 6): a second connection with the same
// token and instance UID closes the first with 4000, recorded and counted.
func TestConnectionReplaced(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	_, secret := d.token("site")
	uid := uuid.New()
	first := mustWS(t, d, secret)
	first.register(uid)
	second := mustWS(t, d, secret)
	second.register(uid)
	if code := first.closeCode(10 * time.Second); code != 4000 {
		t.Errorf("replaced connection closed with %d, want 4000", code)
	}
	a, _ := d.agent(uid.String())
	ev := ""
	for _, e := range a.Events {
		if e.Type == "connection_replaced" {
			ev = e.Message
		}
	}
	if !has(ev, first.ws.LocalAddr().String(), second.ws.LocalAddr().String()) {
		t.Errorf("connection_replaced event %q does not name both addresses", ev)
	}
	if n := d.metric("myriarch_opamp_connections_replaced_total", ""); n != 1 {
		t.Errorf("myriarch_opamp_connections_replaced_total = %v, want 1", n)
	}
}

// TestProtocolViolations (finding 13 and held): each violation is answered
// with its close code, the oversized message at its header.
func TestProtocolViolations(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	_, secret := d.token("site")
	garbage := frame(0x82, []byte{0, 0xff, 0xff, 0xff, 0xff}, -1)
	unmasked := frame(0x82, []byte("x"), -1)
	unmasked[1] &^= 0x80
	for _, tc := range []struct {
		name  string
		bytes []byte
		code  int
	}{
		{"close with a 1-byte payload", frame(0x88, []byte{3}, -1), 1002},
		{"close reason not UTF-8", frame(0x88, []byte{3, 0xe8, 0xff, 0xfe}, -1), 1007},
		{"reserved close code", frame(0x88, []byte{3, 0xed}, -1), 1002},
		{"unknown opcode", frame(0x83, nil, -1), 1002},
		{"unmasked frame", unmasked, 1002},
		{"RSV bits", frame(0xc2, []byte("x"), -1), 1002},
		{"control frame over 125 bytes", frame(0x89, make([]byte, 126), -1), 1002},
		{"text frame", frame(0x81, []byte("hello"), -1), 1003},
		{"not an OpAMP message", garbage, 1003},
		{"9 MiB announced", frame(0x82, nil, 9<<20), 1009},
	} {
		r := dialRaw(t, d, secret)
		r.nc.Write(tc.bytes)
		if code := r.closeCode(10 * time.Second); code != tc.code {
			t.Errorf("%s: closed with %d, want %d", tc.name, code, tc.code)
		}
	}
	// Still serving.
	mustWS(t, d, secret).register(uuid.New())
}

// TestCredentials (held): wrong, malformed and revoked tokens get 401 on
// both transports; revocation disconnects; another credential cannot take
// an instance UID over, and the attempt is recorded.
func TestCredentials(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	id1, secret1 := d.token("one")
	_, secret2 := d.token("two")
	revokedID, revoked := d.token("revoked")
	d.api("DELETE", "/api/v1/tokens/"+revokedID, nil)
	for name, tok := range map[string]string{
		"none": "", "malformed": "hello", "wrong": secret1[:len(secret1)-4] + "AAAA", "revoked": revoked,
	} {
		if _, err := dialWS(t, d, tok); err == nil || !strings.Contains(err.Error(), "401") {
			t.Errorf("WebSocket with a %s token: %v, want 401", name, err)
		}
		if code, _ := pollHTTP(t, d, tok, hello(uuid.New(), 0)); code != http.StatusUnauthorized {
			t.Errorf("plain HTTP with a %s token: %d, want 401", name, code)
		}
	}

	uid := uuid.New()
	owner := mustWS(t, d, secret1)
	owner.register(uid)
	thief := mustWS(t, d, secret2)
	if resp := thief.register(uid); resp.ErrorResponse == nil {
		t.Error("another credential took the instance UID over")
	}
	if a, _ := d.agent(uid.String()); !has(fmtEvents(a), "identity_conflict") {
		t.Errorf("takeover attempt not recorded: %v", a.Events)
	}
	d.api("DELETE", "/api/v1/tokens/"+id1, nil)
	owner.ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		_, _, err := owner.ws.ReadMessage()
		if err == nil {
			continue
		}
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Error("connection of a revoked token still open 10 s after the revocation")
		}
		break
	}
}

func fmtEvents(a agentView) string {
	var b strings.Builder
	for _, e := range a.Events {
		b.WriteString(e.Type + ": " + e.Message + "\n")
	}
	return b.String()
}
