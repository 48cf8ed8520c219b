package console_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/internal/testenv"
	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/servertest"
	"github.com/myriarch/myriarch/server/store"
)

// benchPairs is the size of the benchmarks' estate: 50 000 collector and
// updater pairs, 100 000 agents (MYRIARCH_BENCH_PAIRS overrides it).
func benchPairs(b *testing.B) int { return testenv.BenchPairs(b, 50000) }

// benchServer is a real myriarchd (SQLite, estate with a fleet) whose
// registry is filled with pairs collector/updater pairs through
// Registry.Report, as the OpAMP endpoint fills it, with the offers and
// configuration engines observing.
func benchServer(b *testing.B, pairs int) (*server.Server, []uuid.UUID) {
	b.Helper()
	dir := b.TempDir()
	for _, d := range []string{"fleets", "packages/" + pkg} {
		os.MkdirAll(dir+"/"+d, 0o755)
	}
	os.WriteFile(dir+"/fleets/edge.yaml", []byte("name: edge\npriority: 10\nselector: {site.type: edge}\npackage: "+pkg+"\ntargetVersion: 0.149.0\n"), 0o644)
	os.WriteFile(dir+"/packages/"+pkg+"/0.149.0.yaml", []byte("name: "+pkg+"\nversion: 0.149.0\nartifacts:\n"+
		"  - {os: linux, arch: amd64, url: \"https://mirror.example/otelcol.tar.gz\", sha256: "+strings.Repeat("ab", 32)+", executable: otelcol-contrib}\n"), 0o644)
	srv, err := server.New(context.Background(), server.Options{DataDir: b.TempDir(), Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0",
		Estate: dir, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		srv.Close(ctx)
	})
	tok, _, err := srv.Tokens().Create(context.Background(), "bench", map[string]string{"wave": "1"})
	if err != nil {
		b.Fatal(err)
	}
	cred := store.Credential{Kind: "token", ID: tok.ID}
	reg := srv.Registry()
	var cols []uuid.UUID
	for i := range pairs {
		host := fmt.Sprintf("host-%06d", i)
		col, upd := uuid.New(), uuid.New()
		cols = append(cols, col)
		version := []string{"0.148.0", "0.149.0"}[i%2]
		reg.Report(col, cred, &protobufs.AgentToServer{SequenceNum: 1, Capabilities: uint64(servertest.CollectorCaps),
			Health: &protobufs.ComponentHealth{Healthy: true, Status: "StatusOK"},
			AgentDescription: &protobufs.AgentDescription{IdentifyingAttributes: servertest.CollectorIdentity(col, version),
				NonIdentifyingAttributes: servertest.KVs("host.name", host, "os.type", "linux", "host.arch", "amd64",
					"site.type", "edge", "site.id", fmt.Sprintf("%05d", i%20000), "site.region", fmt.Sprintf("region-%d", i%7))}}, false, true)
		reg.Report(upd, cred, &protobufs.AgentToServer{SequenceNum: 1, Capabilities: uint64(servertest.UpdaterCaps),
			AgentDescription: &protobufs.AgentDescription{
				IdentifyingAttributes: servertest.KVs("service.name", "myriarch-updater", "service.version", "0.1.0", "service.instance.id", upd.String()),
				NonIdentifyingAttributes: servertest.KVs("host.name", host, "os.type", "linux", "host.arch", "amd64",
					"dev.myriarch.install.mode", "binary", "dev.myriarch.collector.instance_uid", col.String())}}, false, true)
	}
	// Measure the console, not the write-behind of the registrations.
	if err := reg.Flush(); err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	return srv, cols
}

// consoleClient logs in to the console of srv with the admin token.
func consoleClient(b *testing.B, srv *server.Server) (*http.Client, string) {
	b.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	base := "http://" + srv.AdminAddr().String()
	resp, err := c.Get(base + "/login")
	if err != nil {
		b.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := csrfField.FindStringSubmatch(string(body))
	if m == nil {
		b.Fatal("no CSRF token on the login page")
	}
	resp, err = c.PostForm(base+"/login", url.Values{"csrf": {m[1]}, "token": {srv.AdminToken()}})
	if err != nil || resp.Request.URL.Path != "/" {
		b.Fatalf("login: %v %v", err, resp)
	}
	resp.Body.Close()
	return c, base
}

// BenchmarkConsolePages times console pages at 100 000 agents, from the
// request to the last byte read, and reports the size of each page.
func BenchmarkConsolePages(b *testing.B) {
	srv, cols := benchServer(b, benchPairs(b))
	c, base := consoleClient(b, srv)
	for _, p := range []struct{ name, path string }{
		{"agents-first-page", "/agents"},
		{"agents-by-last-seen-200", "/agents?sort=-lastSeen&per=200"},
		{"agents-text-filter", "/agents?q=host-0123"},
		{"agents-offer-state-page-500", "/agents?kind=collector&offerState=up_to_date&page=500"},
		{"overview", "/"},
		{"agent", "/agents/" + cols[len(cols)/2].String()},
	} {
		b.Run(p.name, func(b *testing.B) {
			size := 0
			cpu0 := testenv.ProcessCPU()
			for b.Loop() {
				resp, err := c.Get(base + p.path)
				if err != nil {
					b.Fatal(err)
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || resp.Request.URL.Path == "/login" {
					b.Fatalf("%s: %d at %s", p.path, resp.StatusCode, resp.Request.URL)
				}
				size = int(n)
			}
			b.ReportMetric(float64(size), "bytes/page")
			b.ReportMetric(float64((testenv.ProcessCPU()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}

// BenchmarkLiveStreamMemory opens live streams (GET /events) from bare TCP
// connections, so the memory they add is the server's, and reports the heap
// and stack each open console's stream holds.
func BenchmarkLiveStreamMemory(b *testing.B) {
	const streams = 500
	srv, _ := benchServer(b, 100)
	for b.Loop() {
		var cookies []string
		for range (streams + 31) / 32 { // at most 32 streams per login
			c, base := consoleClient(b, srv)
			u, _ := url.Parse(base)
			for _, ck := range c.Jar.Cookies(u) {
				if ck.Name == "myriarch_console" {
					cookies = append(cookies, ck.Value)
				}
			}
		}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		conns := make([]net.Conn, 0, streams)
		for i := range streams {
			conn, err := net.Dial("tcp", srv.AdminAddr().String())
			if err != nil {
				b.Fatal(err)
			}
			fmt.Fprintf(conn, "GET /events HTTP/1.1\r\nHost: x\r\nCookie: myriarch_console=%s\r\n\r\n", cookies[i/32])
			status, err := bufio.NewReaderSize(conn, 64).ReadString('\n')
			if err != nil || !strings.Contains(status, "200") {
				b.Fatalf("stream %d: %q %v", i, status, err)
			}
			conns = append(conns, conn)
		}
		time.Sleep(200 * time.Millisecond) // the handlers reach their wait
		runtime.GC()
		runtime.ReadMemStats(&after)
		per := float64(int64(after.HeapInuse+after.StackInuse)-int64(before.HeapInuse+before.StackInuse)) / streams
		b.ReportMetric(per, "bytes/stream")
		for _, conn := range conns {
			conn.Close()
		}
	}
}
