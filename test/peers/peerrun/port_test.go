package peerrun

import (
	"net"
	"strconv"
	"testing"
)

func TestLocalPortIsFreeAndBelowTheEphemeralRange(t *testing.T) {
	for range 20 {
		p, err := LocalPort()
		if err != nil {
			t.Fatal(err)
		}
		if p < portLow || p >= portHigh {
			t.Fatalf("port %d outside [%d, %d)", p, portLow, portHigh)
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("port %d handed out but not free: %v", p, err)
		}
		// A port in use is not handed out.
		if free(p) {
			t.Errorf("port %d reported free while listened on", p)
		}
		l.Close()
	}
}
