package wsconn

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/myriarch/myriarch/internal/testcert"
)

// clientEnv makes the test binary a client process (TestIdleClientProcess):
// "addr n tls|plain".
const clientEnv = "MYRIARCH_WSCONN_IDLE_CLIENT"

// BenchmarkIdleConnectionsTLS measures what an idle connection costs the
// server, over TLS 1.3 with an ECDSA P-256 certificate and over plain TCP,
// under the platform's poller: 2 000 agents connect from another process,
// each upgrades, sends one 2 KiB message (an agent's first report) and
// reads the answer, then stays idle. Only the server is in this process,
// so the heap it keeps per connection is the server's alone. With
// MYRIARCH_WSCONN_HEAP_PROFILE=FILE the TLS run writes its heap profile
// there while the connections are open, every allocation sampled (go tool
// pprof -sample_index=inuse_space; divide by 2 000).
func BenchmarkIdleConnectionsTLS(b *testing.B) {
	const n = 2000
	mk, ok := pollerKinds()["epoll"]
	if !ok {
		b.Skip("no epoll poller on this platform")
	}
	if os.Getenv("MYRIARCH_WSCONN_HEAP_PROFILE") != "" {
		runtime.MemProfileRate = 1 // every allocation, for a breakdown per connection
	}
	for _, mode := range []string{"plain", "tls"} {
		b.Run(mode, func(b *testing.B) {
			for range b.N {
				f := newFixture(b, mk, false, Options{})
				if mode == "tls" {
					f = newECDSAFixture(b, mk)
				}
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				addr := f.srv.Listener.Addr().String()
				cmd := exec.Command(os.Args[0], "-test.run=^TestIdleClientProcess$", "-test.count=1")
				cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d %s", clientEnv, addr, n, mode))
				stdin, _ := cmd.StdinPipe()
				stdout, _ := cmd.StdoutPipe()
				cmd.Stderr = os.Stderr
				if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				out := bufio.NewReader(stdout)
				line, err := out.ReadString('\n')
				if err != nil || !strings.HasPrefix(line, "ready") {
					rest, _ := io.ReadAll(out)
					b.Fatalf("client: %s%s %v", line, rest, err)
				}
				f.waitLive(b, n)
				time.Sleep(200 * time.Millisecond) // net/http's handler goroutines end
				runtime.GC()
				runtime.GC()
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(int64(after.HeapInuse)-int64(before.HeapInuse))/n, "heap-B/conn")
				b.ReportMetric(float64(int64(after.StackInuse)-int64(before.StackInuse))/n, "stack-B/conn")
				if path := os.Getenv("MYRIARCH_WSCONN_HEAP_PROFILE"); path != "" && mode == "tls" {
					if out, err := os.Create(path); err == nil {
						pprof.Lookup("heap").WriteTo(out, 0)
						out.Close()
					}
				}
				stdin.Close()
				cmd.Wait()
			}
		})
	}
}

// newECDSAFixture is newFixture over TLS 1.3 with an ECDSA P-256 certificate.
func newECDSAFixture(b *testing.B, mk func(Options) Poller) *fixture {
	c, err := testcert.Loopback(time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	return newFixtureOn(b, mk, &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{c.TLS}}, Options{})
}

// TestIdleClientProcess is the client side of BenchmarkIdleConnectionsTLS,
// in its own process; without clientEnv it does nothing.
func TestIdleClientProcess(t *testing.T) {
	spec := os.Getenv(clientEnv)
	if spec == "" {
		return
	}
	var addr, mode string
	var n int
	fmt.Sscanf(spec, "%s %d %s", &addr, &n, &mode)
	msg := clientFrame(true, 2, []byte(strings.Repeat("d", 2048)))
	conns := make([]net.Conn, 0, n)
	for range n {
		var nc net.Conn
		var err error
		if mode == "tls" {
			nc, err = tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // a loopback benchmark
		} else {
			nc, err = net.Dial("tcp", addr)
		}
		if err != nil {
			t.Fatal(err)
		}
		req := "GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
		if _, err := nc.Write(append([]byte(req), msg...)); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(nc)
		for { // the upgrade's answer, then the echo
			l, err := br.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			if l == "\r\n" {
				break
			}
		}
		if _, payload := readServerFrame(t, br); len(payload) != 2048 {
			t.Fatalf("echo of %d bytes", len(payload))
		}
		conns = append(conns, nc)
	}
	fmt.Println("ready", strconv.Itoa(len(conns)))
	io.Copy(io.Discard, os.Stdin) // hold them until the benchmark is done
	for _, c := range conns {
		c.Close()
	}
}
