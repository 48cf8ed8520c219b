package server_test

import (
	"context"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/internal/testenv"
	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/admin"
)

// PostgreSQL restarted (fast shutdown, then start) under two instances:
// agents stay connected, what happens meanwhile (a new agent, events) is
// written once the database is back and reaches the other instance, and
// a later instance on the database finds everything.
func TestInstancesSurvivePostgresRestart(t *testing.T) {
	pg := testenv.StartCluster(t)
	a := startServer(t, func(o *server.Options) { o.Store = pg.DSN("postgres"); o.Heartbeat = time.Second })
	b := startServer(t, func(o *server.Options) { o.Store = pg.DSN("postgres"); o.Heartbeat = time.Second })
	tok := a.createToken("edge", map[string]string{"wave": "1"})
	for b.Tokens().TokenName(tok.ID) == "" {
		time.Sleep(20 * time.Millisecond)
	}
	spec := func(host string) agentSpec {
		uid := newUID(t)
		return agentSpec{uid: uid, token: tok.Token,
			identifying: kvs("service.name", "otelcol-contrib", "service.version", "0.149.0", "service.instance.id", uid.String()),
			nonIdent:    kvs("host.name", host)}
	}
	before, during := spec("before"), spec("during")
	a.connect(before)
	b.waitAgent(before.uid, "on B before the restart", func(x admin.Agent) bool { return x.Online })

	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	a.connect(during) // registered while the database is down: held in memory
	a.waitAgent(during.uid, "registered on A while PostgreSQL is down", func(x admin.Agent) bool { return x.Online })
	time.Sleep(time.Second) // flushes fail and are kept meanwhile
	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	b.waitAgent(during.uid, "on B after the restart", func(x admin.Agent) bool {
		return x.Online && x.Attributes["host.name"] == "during" && x.Labels["wave"] == "1"
	})
	b.waitAgent(before.uid, "still online on B", func(x admin.Agent) bool { return x.Online })

	a.stop()
	b.stop()
	c := startServer(t, func(o *server.Options) { o.Store = pg.DSN("postgres") })
	for _, s := range []agentSpec{before, during} {
		got, ok := c.agent(s.uid)
		if !ok {
			t.Fatalf("agent %s lost", s.uid)
		}
		if _, ok := hasEvent(got, "registered"); !ok || got.Labels["wave"] != "1" {
			t.Fatalf("agent %s came back without its history or labels: %+v", s.uid, got)
		}
	}
}

// slowProxy forwards TCP connections to PostgreSQL's Unix socket, holding
// every chunk for a delay that the test sets (a slow network to the store).
type slowProxy struct {
	ln     net.Listener
	target string
	delay  atomic.Int64 // nanoseconds
	wg     sync.WaitGroup
}

func newSlowProxy(t *testing.T, socket string) *slowProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &slowProxy{ln: ln, target: socket}
	var conns sync.Map
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("unix", socket)
			if err != nil {
				c.Close()
				continue
			}
			conns.Store(c, up)
			p.wg.Add(2)
			go p.pump(c, up)
			go p.pump(up, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		conns.Range(func(k, v any) bool { k.(net.Conn).Close(); v.(net.Conn).Close(); return true })
		p.wg.Wait()
	})
	return p
}

func (p *slowProxy) pump(dst, src net.Conn) {
	defer p.wg.Done()
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			time.Sleep(time.Duration(p.delay.Load()))
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				return
			}
			return
		}
	}
}

func (p *slowProxy) dsn() string {
	return "postgres://myriarch@" + p.ln.Addr().String() + "/postgres?sslmode=disable&" + url.Values{"application_name": {"slow"}}.Encode()
}

// A slow network to PostgreSQL does not slow heartbeats: agents are
// answered from memory while the write-behind flush waits on the store.
// Compared within one run: every heartbeat round trip while the store is
// slow is shorter than a single query's round trip to it.
func TestSlowPostgresDoesNotBlockHeartbeats(t *testing.T) {
	pg := testenv.StartCluster(t)
	proxy := newSlowProxy(t, pg.SocketPath())
	ts := startServer(t, func(o *server.Options) { o.Store = proxy.dsn() })
	tok := ts.createToken("edge", nil)
	ag := dialRaw(t, ts, tok.Token)
	uid := newUID(t)
	seq := uint64(0)
	report := func(desc bool) time.Duration {
		m := &protobufs.AgentToServer{InstanceUid: uid[:], SequenceNum: seq, Capabilities: uint64(baseCaps)}
		if desc {
			m.AgentDescription = &protobufs.AgentDescription{IdentifyingAttributes: kvs("service.name", "otelcol-contrib", "service.instance.id", uid.String()),
				NonIdentifyingAttributes: kvs("host.name", "h", "seq", strings.Repeat("x", int(seq%7)))}
		}
		seq++
		t0 := time.Now()
		ag.send(m)
		ag.recv()
		return time.Since(t0)
	}
	report(true)

	proxy.delay.Store(int64(200 * time.Millisecond))
	// One query's round trip to the slow store, measured beside the heartbeats.
	conn, err := pgx.Connect(context.Background(), proxy.dsn())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	t0 := time.Now()
	if _, err := conn.Exec(context.Background(), "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	query := time.Since(t0)

	var worst time.Duration
	deadline := time.Now().Add(4 * time.Second) // several flushes, each waiting on the store
	for i := 0; time.Now().Before(deadline); i++ {
		worst = max(worst, report(i%5 == 0)) // description changes keep the flush busy
	}
	if worst >= query {
		t.Fatalf("a heartbeat took %s while one query to the slow store takes %s: heartbeats wait on the store", worst, query)
	}
	t.Logf("worst heartbeat round trip %s; one store query %s", worst, query)
	proxy.delay.Store(0)
}
