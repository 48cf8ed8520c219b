package opampsrv

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestSmallBuffers checks the upgrader is handed buffers of the bounded
// sizes, and that bytes a client sent ahead stay with their reader.
func TestSmallBuffers(t *testing.T) {
	tests := []struct {
		name       string
		ahead      string // sent right after the request, before any answer
		wantReader int
		wantWriter int
	}{
		{name: "nothing buffered: small buffers", wantReader: wsReadBuffer, wantWriter: wsWriteBuffer},
		{name: "bytes buffered: the original reader", ahead: "early", wantReader: 4096, wantWriter: 4096},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := make(chan [3]int, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				c, brw, err := smallBuffers{w}.Hijack()
				if err != nil {
					t.Errorf("hijack: %v", err)
					got <- [3]int{}
					return
				}
				defer c.Close()
				got <- [3]int{brw.Reader.Size(), brw.Writer.Size(), brw.Reader.Buffered()}
			}))
			defer srv.Close()
			conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			// One write, so an ahead payload arrives with the request.
			if _, err := conn.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n" + tc.ahead)); err != nil {
				t.Fatal(err)
			}
			g := <-got
			if g[0] != tc.wantReader || g[1] != tc.wantWriter {
				t.Errorf("reader %d writer %d bytes, want %d and %d", g[0], g[1], tc.wantReader, tc.wantWriter)
			}
			if g[2] != len(tc.ahead) {
				t.Errorf("%d bytes buffered, want %d", g[2], len(tc.ahead))
			}
		})
	}
}

type noHijack struct{ http.ResponseWriter }

func TestSmallBuffersWithoutHijacker(t *testing.T) {
	_, _, err := smallBuffers{noHijack{httptest.NewRecorder()}}.Hijack()
	if err != http.ErrNotSupported {
		t.Fatalf("got %v, want http.ErrNotSupported", err)
	}
}
