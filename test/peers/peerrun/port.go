package peerrun

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
)

// Ports handed out by LocalPort lie in [portLow, portHigh): below Linux's
// default ephemeral range (32768–60999), from which outgoing connections
// take their local ports.
const (
	portLow  = 20000
	portHigh = 32000
)

// LocalPort returns a TCP port that is free on both loopback addresses now
// and lies below the kernel's ephemeral port range. A port found by
// listening on port 0 and closing it again (what the upstream Supervisor
// does for its collector's OpAMP server) can be taken by any outgoing
// connection of a busy test run before its process listens on it; a port
// outside that range can only be taken by another explicit listener.
func LocalPort() (int, error) {
	for range 200 {
		p := portLow + rand.IntN(portHigh-portLow)
		if free(p) {
			return p, nil
		}
	}
	return 0, fmt.Errorf("no free loopback port in [%d, %d)", portLow, portHigh)
}

// LocalAddr is 127.0.0.1 with a port from LocalPort.
func LocalAddr() (string, error) {
	p, err := LocalPort()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p)), nil
}

// free reports whether port can be listened on at 127.0.0.1 and, where the
// host has IPv6 loopback, at ::1 ("localhost" may be either).
func free(port int) bool {
	l4, err := net.Listen("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	defer l4.Close()
	l6, err := net.Listen("tcp6", net.JoinHostPort("::1", strconv.Itoa(port)))
	if err != nil {
		var addrErr *net.AddrError
		// No IPv6 loopback here: only 127.0.0.1 matters.
		return errors.As(err, &addrErr) || !ipv6Loopback()
	}
	l6.Close()
	return true
}

// ipv6Loopback reports whether ::1 can be listened on at all.
func ipv6Loopback() bool {
	l, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		return false
	}
	l.Close()
	return true
}
