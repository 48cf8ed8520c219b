//go:build linux

package attack

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/open-telemetry/opamp-go/protobufs"
)

// TestAttackRun runs the attacks on the server's newer surfaces one after
// another against one myriarchd, at their full sizes, while collectors of
// another site keep connecting and being configured: providers snapshots
// (JSON trees, tens of thousands of providers, processors nested
// thousands deep, a provider named labels, a listening processor, a flood
// of 1 MiB snapshots), identity conflicts, effective configurations of
// 7 MiB (and of 3.9 MiB, read) every second from one and then three
// collectors, wrong admin tokens, failed console logins, crafted console
// links and another agent's configuration by hash. At the end the server
// holds less than 200 MiB and no collector waited more than a second for
// its configuration at any time. (Two instances holding one agent are
// attacked in the server package, on PostgreSQL.)
func TestAttackRun(t *testing.T) {
	t.Parallel()
	d := startDaemonWithEstate(t, dockerEstate)
	_, siteA := d.token("site-a")
	_, siteB := d.token("site-b")
	_, victims := d.token("victims")
	rss0 := d.rss()

	var peak atomic.Int64
	stopSampling := make(chan struct{})
	var sampling sync.WaitGroup
	sampling.Go(func() {
		for {
			peak.Store(max(peak.Load(), d.rss()))
			select {
			case <-stopSampling:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
	v := newVictim(t, d, victims)
	step := func(name string, attack func()) {
		t.Helper()
		start := time.Now()
		worst := v.during(attack)
		figure(t, "attack run, %s: %s, RSS %s, slowest configuration of another collector meanwhile %s",
			name, time.Since(start).Round(100*time.Millisecond), mib(d.rss()), worst.Round(time.Millisecond))
	}

	// 1. Providers snapshots that grow the server.
	step("25 unlinked updaters with 1 MiB JSON trees, one with 61 830 providers", func() {
		tree := treeSnapshot((1<<20 - 200) / 3)
		for i := range 25 {
			m := updaterHello(uuid.New(), uuid.Nil, fmt.Sprintf("tree-%02d", i))
			m.CustomMessage = &protobufs.CustomMessage{Capability: providersCapability, Type: "snapshot", Data: tree}
			pollHTTP(t, d, siteA, m)
		}
		var many strings.Builder
		many.WriteString(`{"context": {`)
		for i := range 61830 {
			if i > 0 {
				many.WriteByte(',')
			}
			fmt.Fprintf(&many, `"p%d": {"k": 1}`, i)
		}
		many.WriteString(`}}`)
		m := updaterHello(uuid.New(), uuid.Nil, "many")
		m.CustomMessage = &protobufs.CustomMessage{Capability: providersCapability, Type: "snapshot", Data: []byte(many.String())}
		pollHTTP(t, d, siteA, m)
	})

	// 2, 6, 7. A linked updater: processors nested 5 000 and 2 000 deep,
	// a provider named labels, a processor that listens.
	col, upd := uuid.New(), uuid.New()
	linked := mustWS(t, d, siteA)
	if err := linked.send(collectorHello(col, "h-linked", "linked")); err != nil {
		t.Fatal(err)
	}
	pollHTTP(t, d, siteA, updaterHello(upd, col, "h-linked"))
	testkit.WaitWithin(t, 30*time.Second, "the updater linked to its collector", func() bool {
		_, body := d.agentJSON(col.String())
		return strings.Contains(string(body), `"linked"`)
	})
	seq := uint64(1)
	send := func(data []byte) {
		seq++
		pollHTTP(t, d, siteA, snapshotMessage(upd, seq, data))
		time.Sleep(hostContextInterval) // one taken a second: each is read
	}
	step("nested processors, a labels provider, a listening processor", func() {
		for _, depth := range []int{5000, 2000} {
			var ms []string
			for i := range 8 {
				ms = append(ms, fmt.Sprintf(`{"id": "m%d", "mapping": {"paths": {"log": "/l%d"}}, "processors": [{"add_fields": {"fields": %s1%s}}]}`,
					i, i, strings.Repeat(`{"a": `, depth), strings.Repeat("}", depth)))
			}
			send([]byte(`{"dynamic": {"docker": [` + strings.Join(ms, ",") + `]}}`))
		}
		send([]byte(`{"context": {"labels": {"tier": "gold"}}}`))
		send([]byte(`{"dynamic": {"docker": [{"id": "tap", "mapping": {"paths": {"log": "/l"}}, "processors": [{"remotetap": {"endpoint": "0.0.0.0:12001"}}]}]}}`))
	})
	a, _ := d.agent(upd.String())
	if n := strings.Count(fmtEvents(a), "providers_refused"); n < 3 {
		t.Errorf("%d refusals of the linked updater's snapshots, want 3:\n%s", n, fmtEvents(a))
	}
	if _, body := d.api("GET", "/api/v1/agents/"+col.String()+"/config", nil); strings.Contains(string(body), "12001") || strings.Contains(string(body), "gold") {
		t.Errorf("the linked collector's configuration took what was refused:\n%s", body)
	}

	// 3. Identity conflicts: site A's token presenting a site-B agent's
	// UID, reconnecting at once for 3 s.
	target := uuid.New()
	mustWS(t, d, siteB).register(target)
	step("identity conflicts for 3 s", func() {
		end := time.Now().Add(3 * time.Second)
		for time.Now().Before(end) {
			c, err := dialWS(t, d, siteA)
			if err != nil {
				continue
			}
			if c.send(hello(target, 0)) == nil {
				c.recv(10 * time.Second)
			}
			c.ws.Close()
		}
	})
	if a, _ := d.agent(target.String()); strings.Count(fmtEvents(a), "identity_conflict") > 2 {
		t.Errorf("the target's history:\n%s", fmtEvents(a))
	}

	// 4. Effective configurations of 7 MiB every second, from one and
	// then three collectors; then of 3.9 MiB, which are read.
	for _, tc := range []struct {
		name       string
		collectors int
		size       int
	}{{"a 7 MiB effective configuration a second from one collector", 1, 7 << 20},
		{"from three collectors", 3, 7 << 20},
		{"3.9 MiB ones, read, from three collectors", 3, 3900 << 10}} {
		var ws []*wsAgent
		var uids []uuid.UUID
		for i := range tc.collectors {
			c, uid := mustWS(t, d, siteA), uuid.New()
			if err := c.send(collectorHello(uid, fmt.Sprintf("h-eff-%d", i), "eff")); err != nil {
				t.Fatal(err)
			}
			go io.Copy(io.Discard, c.ws.UnderlyingConn()) // answers are not read
			ws, uids = append(ws, c), append(uids, uid)
		}
		step(tc.name, func() {
			for s := range 5 {
				for i, c := range ws {
					c.send(&protobufs.AgentToServer{InstanceUid: uids[i][:], SequenceNum: uint64(s + 1),
						EffectiveConfig: &protobufs.EffectiveConfig{ConfigMap: &protobufs.AgentConfigMap{ConfigMap: map[string]*protobufs.AgentConfigFile{
							"": {Body: effectiveOf(tc.size, s)}}}}})
				}
				time.Sleep(time.Second)
			}
		})
	}

	// 8–11. The admin API and the console.
	step("1 000 wrong admin tokens, failed console logins, crafted links, another agent's configuration", func() {
		for range 1000 {
			req, _ := http.NewRequest("GET", "http://"+d.admin+"/api/v1/agents", nil)
			req.Header.Set("Authorization", "Bearer wrong-token-guess-0123456789abcdef")
			if resp, err := d.http.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
		browser := consoleLogin(t, d, 10)
		resp, err := browser.Get("http://" + d.admin + "/tokens?done=revoked&name=" + url.QueryEscape("ci; call +1 555 0100"))
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(page), "555 0100") {
			t.Errorf("a crafted link shows its text on the console")
		}
		code, body := d.api("GET", "/api/v1/agents/"+col.String()+"/config", nil)
		if code != 200 {
			t.Fatalf("the linked collector's configuration: %d %s", code, body)
		}
		sum := sha256.Sum256(body)
		if code, _ := d.api("GET", "/api/v1/agents/"+v.uid.String()+"/config?hash="+hex.EncodeToString(sum[:]), nil); code != 404 {
			t.Errorf("another agent's configuration by hash: %d, want 404", code)
		}
	})

	// 12. A flood of 1 MiB snapshots: 30 in 6 s.
	flooder := uuid.New()
	pollHTTP(t, d, siteA, updaterHello(flooder, uuid.Nil, "flooder"))
	big := bigValidSnapshot()
	step("30 snapshots of 1 MiB in 6 s", func() {
		for i := range 30 {
			pollHTTP(t, d, siteA, snapshotMessage(flooder, uint64(i+1), big))
			time.Sleep(200 * time.Millisecond)
		}
	})

	close(stopSampling)
	sampling.Wait()
	end := d.rss()
	figure(t, "attack run: RSS %s at the start, %s at the end, %s at its highest; a collector of another site configured %d times meanwhile, at most in %s",
		mib(rss0), mib(end), mib(peak.Load()), v.n, v.worst.Round(time.Millisecond))
	if end > 200<<20 {
		t.Errorf("RSS %s at the end of the attack run, want under 200 MiB", mib(end))
	}
	// The figure is the measure (BENCHMARKS.md: tens of milliseconds with
	// the cores to itself, about a second while `make test` runs three
	// other packages on them); the check is for a stall, which is seconds.
	if v.worst > stallAfter {
		t.Errorf("a collector of another site waited up to %s for its configuration during the attacks, want at most %s", v.worst, stallAfter)
	}
}

// stallAfter is how long a collector of another site may wait for its
// configuration during the attacks before the server counts as stalled.
const stallAfter = 3 * time.Second

// hostContextInterval is the least time between two snapshots the server
// takes from one updater.
const hostContextInterval = 1100 * time.Millisecond

// effectiveOf is an effective configuration of about size bytes, different
// for each n.
func effectiveOf(size, n int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "receivers:\n  otlp/%d: {}\nexporters:\n  debug: {}\nprocessors:\n", n)
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "  attributes/%d:\n    actions:\n      - {key: k%d, value: v, action: upsert}\n", i, i)
	}
	b.WriteString("service:\n  pipelines:\n    logs: {receivers: [otlp], exporters: [debug]}\n")
	return []byte(b.String())
}

// consoleLogin fails to log in to the console wrong times from this
// address, then logs in with the admin token and returns the logged-in
// browser.
func consoleLogin(t *testing.T, d *daemon, wrong int) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: time.Minute, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	base := "http://" + d.admin
	login := func(token string) int {
		resp, err := c.Get(base + "/login")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		csrf := ""
		u, _ := url.Parse(base + "/login")
		for _, ck := range jar.Cookies(u) {
			if ck.Name == "myriarch_login" {
				csrf = ck.Value
			}
		}
		resp, err = c.PostForm(base+"/login", url.Values{"csrf": {csrf}, "token": {token}, "next": {"/"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for range wrong {
		login("not-the-admin-token-0123456789abcdef")
	}
	if code := login(d.adminToken); code != http.StatusSeeOther {
		t.Fatalf("the admin token after %d failed logins from this address: %d, want 303", wrong, code)
	}
	return c
}
