//go:build linux

package main

import (
	"net"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// listenLoopback accepts every connection and holds it until the test
// ends, or with hold false closes it at once (the dialing side keeps its
// port, the accepting side no descriptor).
func listenLoopback(t testing.TB, hold bool) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	held := make(chan []net.Conn, 1)
	go func() {
		var cs []net.Conn
		for {
			c, err := ln.Accept()
			if err != nil {
				held <- cs
				return
			}
			if hold {
				cs = append(cs, c)
			} else {
				c.Close()
			}
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for _, c := range <-held {
			c.Close()
		}
	})
	return ln
}

func TestSourceDialerChoosesThePortAtConnect(t *testing.T) {
	ln := listenLoopback(t, true)
	src := net.IPv4(127, 1, 0, 2)
	d := sourceDialer(src, 5*time.Second)
	ports := map[int]bool{}
	for i := 0; i < 200; i++ {
		c, err := d.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		defer c.Close()
		la := c.LocalAddr().(*net.TCPAddr)
		if !la.IP.Equal(src) {
			t.Fatalf("dial %d: from %s, want %s", i, la.IP, src)
		}
		if la.Port == 0 || ports[la.Port] {
			t.Fatalf("dial %d: local port %d (zero or used twice)", i, la.Port)
		}
		ports[la.Port] = true
		rc, err := c.(*net.TCPConn).SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var v int
		var gerr error
		if err := rc.Control(func(fd uintptr) {
			v, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_BIND_ADDRESS_NO_PORT)
		}); err != nil || gerr != nil {
			t.Fatalf("getsockopt: %v %v", err, gerr)
		}
		if v != 1 {
			t.Fatalf("dial %d: IP_BIND_ADDRESS_NO_PORT = %d, want 1", i, v)
		}
	}
}

// BenchmarkDialFromSource dials from a source address that already has
// sockets open, choosing the port at bind (a plain LocalAddr) or at connect
// (sourceDialer). Binding looks at half the port range first, where the
// sockets before it already took most ports once there are thousands.
// Compare the two in one run:
//
//	go test -run XXX -bench DialFromSource ./test/load/
func BenchmarkDialFromSource(b *testing.B) {
	for _, open := range []int{2000, 16000} {
		for _, mode := range []string{"bind", "connect"} {
			b.Run(mode+"/open="+strconv.Itoa(open), func(b *testing.B) {
				ln := listenLoopback(b, false)
				src := net.IPv4(127, 1, 0, 3)
				d := sourceDialer(src, 5*time.Second)
				if mode == "bind" {
					d = &net.Dialer{LocalAddr: &net.TCPAddr{IP: src}, Timeout: 5 * time.Second}
				}
				for i := 0; i < open; i++ {
					c, err := d.Dial("tcp", ln.Addr().String())
					if err != nil {
						b.Fatal(err)
					}
					defer c.Close()
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					c, err := d.Dial("tcp", ln.Addr().String())
					if err != nil {
						b.Fatal(err)
					}
					c.(*net.TCPConn).SetLinger(0) // a reset, no TIME_WAIT left holding the port
					c.Close()
				}
			})
		}
	}
}
