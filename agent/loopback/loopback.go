// Package loopback checks that a URL the updater will call on its own stays
// on this host: the install engines' health gates use local signals only,
// so a configured health endpoint must never name another machine.
package loopback

import (
	"fmt"
	"net"
	"net/url"
)

// CheckURL accepts only http(s) URLs whose host is localhost or a loopback
// IP address (127.0.0.0/8, ::1); the error quotes raw and says why.
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%q: scheme must be http or https", raw)
	}
	h := u.Hostname()
	if h == "localhost" {
		return nil
	}
	if ip := net.ParseIP(h); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%q: host must be loopback (localhost, 127.0.0.1, ::1)", raw)
}
