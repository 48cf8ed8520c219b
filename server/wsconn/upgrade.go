package wsconn

import (
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// HandshakeError is a refused upgrade request; Status is what it was answered with.
type HandshakeError struct {
	Status int
	Reason string
}

func (e *HandshakeError) Error() string {
	return fmt.Sprintf("websocket handshake refused (%d): %s", e.Status, e.Reason)
}

// Upgrade completes the opening handshake of r (RFC 6455 §4.2.2) and takes
// the connection over from net/http. On error it has answered the request
// (400, 403, 405 or 426) naming what was wrong.
func Upgrade(w http.ResponseWriter, r *http.Request) (*Conn, error) {
	if err := checkHandshake(r); err != nil {
		if err.Status == http.StatusUpgradeRequired {
			w.Header().Set("Sec-WebSocket-Version", "13")
		}
		http.Error(w, err.Reason, err.Status)
		return nil, err
	}
	nc, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, "cannot take over the connection", http.StatusInternalServerError)
		return nil, fmt.Errorf("websocket upgrade from %s: hijack: %w", r.RemoteAddr, err)
	}
	c := &Conn{nc: nc}
	if n := brw.Reader.Buffered(); n > 0 { // the client did not wait for our answer
		p, _ := brw.Reader.Peek(n)
		c.early = append([]byte(nil), p...)
	}
	resp := "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " +
		acceptKey(r.Header.Get("Sec-WebSocket-Key")) + "\r\n\r\n"
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Write([]byte(resp)); err != nil {
		_ = nc.Close()
		return nil, fmt.Errorf("websocket upgrade from %s: write response: %w", r.RemoteAddr, err)
	}
	_ = nc.SetDeadline(time.Time{})
	return c, nil
}

func checkHandshake(r *http.Request) *HandshakeError {
	switch {
	case r.Method != http.MethodGet:
		return &HandshakeError{http.StatusMethodNotAllowed, "websocket handshake must be a GET, not " + r.Method}
	case !headerHasToken(r.Header, "Connection", "upgrade"):
		return &HandshakeError{http.StatusBadRequest, `header "Connection" must contain "Upgrade"`}
	case !headerHasToken(r.Header, "Upgrade", "websocket"):
		return &HandshakeError{http.StatusBadRequest, `header "Upgrade" must contain "websocket"`}
	case r.Header.Get("Sec-WebSocket-Version") != "13":
		return &HandshakeError{http.StatusUpgradeRequired, fmt.Sprintf("unsupported Sec-WebSocket-Version %q (want 13)", r.Header.Get("Sec-WebSocket-Version"))}
	}
	key := r.Header.Get("Sec-WebSocket-Key")
	if k, err := base64.StdEncoding.DecodeString(key); err != nil || len(k) != 16 {
		return &HandshakeError{http.StatusBadRequest, fmt.Sprintf("Sec-WebSocket-Key %q is not 16 bytes in base64", key)}
	}
	// A browser page from elsewhere must not ride an agent's credentials.
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || !strings.EqualFold(u.Host, r.Host) {
			return &HandshakeError{http.StatusForbidden, fmt.Sprintf("Origin %q does not match host %q", o, r.Host)}
		}
	}
	return nil
}

// acceptKey is Sec-WebSocket-Accept for key (RFC 6455 §4.2.2, item 5.4).
func acceptKey(key string) string {
	h := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	return base64.StdEncoding.EncodeToString(h[:])
}

// headerHasToken reports whether a comma-separated header contains token
// (case-insensitively), in any of its lines.
func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}
