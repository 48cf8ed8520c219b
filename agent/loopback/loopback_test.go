package loopback

import (
	"strings"
	"testing"
)

func TestCheckURL(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{"http://127.0.0.1:13133/", ""},
		{"https://127.0.0.2/health", ""},
		{"http://[::1]:8080/", ""},
		{"http://localhost/", ""},
		{"ftp://127.0.0.1/", "scheme must be http or https"},
		{"localhost:13133", "scheme must be http or https"},
		{"127.0.0.1:13133", "first path segment"},
		{"http://192.0.2.1/", "host must be loopback"},
		{"http://example.test/", "host must be loopback"},
		{"http://[::2]/", "host must be loopback"},
		{"http://%zz/", "invalid URL escape"},
	} {
		err := CheckURL(tc.raw)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%q: %v, want %q", tc.raw, err, tc.want)
		}
	}
}
