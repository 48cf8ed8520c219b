package server_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/myriarch/myriarch/server"
)

func TestInsecureListenerRefused(t *testing.T) {
	tests := []struct {
		name     string
		listen   string
		tls      bool
		insecure bool
		refused  bool
	}{
		{"loopback v4", "127.0.0.1:4320", false, false, false},
		{"loopback v4 range", "127.8.9.10:4320", false, false, false},
		{"loopback v6", "[::1]:4320", false, false, false},
		{"localhost", "localhost:4320", false, false, false},
		{"localhost upper case", "LOCALHOST:4320", false, false, false},
		{"unspecified v4", "0.0.0.0:4320", false, false, true},
		{"unspecified v6", "[::]:4320", false, false, true},
		{"empty host", ":4320", false, false, true},
		{"private address", "10.1.2.3:4320", false, false, true},
		{"host name", "myriarch.example.com:4320", false, false, true},
		{"allowed with --insecure-listen", "0.0.0.0:4320", false, true, false},
		{"empty host allowed with --insecure-listen", ":4320", false, true, false},
		{"TLS", "0.0.0.0:4320", true, false, false},
		{"TLS on a private address", "10.1.2.3:4320", true, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := server.Options{DataDir: "/var/lib/myriarch", Listen: tt.listen, AdminListen: "127.0.0.1:4321", InsecureListen: tt.insecure}
			if tt.tls {
				o.TLSCert, o.TLSKey = "/etc/myriarch/tls.crt", "/etc/myriarch/tls.key"
			}
			err := o.Validate()
			if !tt.refused {
				if err != nil {
					t.Fatalf("Validate(%s) = %v, want no error", tt.listen, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate(%s) accepted plain text on a public address", tt.listen)
			}
			for _, want := range []string{tt.listen, "--tls-cert", "--tls-key", "--insecure-listen"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

func TestInsecureListenWarns(t *testing.T) {
	var logs bytes.Buffer
	s, err := server.New(context.Background(), server.Options{DataDir: t.TempDir(), Listen: "0.0.0.0:0", AdminListen: "127.0.0.1:0",
		InsecureListen: true, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "listen=0.0.0.0:0") {
		t.Fatalf("no warning naming the address:\n%s", logs.String())
	}
}

// The admin listener has no TLS: on an address other hosts reach, the
// start warns that the admin token crosses the network in clear text; on
// loopback it says nothing.
func TestPublicAdminListenWarns(t *testing.T) {
	for _, tc := range []struct {
		admin string
		warns bool
	}{{"0.0.0.0:0", true}, {"127.0.0.1:0", false}} {
		var logs bytes.Buffer
		s, err := server.New(context.Background(), server.Options{DataDir: t.TempDir(), Listen: "127.0.0.1:0", AdminListen: tc.admin,
			Log: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(logs.String(), "admin_listen="+tc.admin); got != tc.warns {
			t.Errorf("admin on %s: warned %v, want %v:\n%s", tc.admin, got, tc.warns, logs.String())
		}
	}
}
