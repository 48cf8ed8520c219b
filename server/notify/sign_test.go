package notify

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/myriarch/myriarch/internal/testenv"
)

// The signature is what a second implementation (OpenSSL) computes over
// "<timestamp>.<body>" with the secret.
func TestSignatureIsOpenSSLsHMAC(t *testing.T) {
	openssl := testenv.Tool(t, "openssl", "openssl")
	secret := []byte("0123456789abcdef-secret")
	ts := time.Unix(1796636312, 0)
	for _, body := range []string{`{"event":"config_failed","fleet":"edge"}`, "", "line one\nline two\x00\xff"} {
		stamp, sig := Sign(secret, ts, []byte(body))
		if stamp != "1796636312" {
			t.Fatalf("timestamp %q", stamp)
		}
		cmd := exec.Command(openssl, "dgst", "-sha256", "-hmac", string(secret), "-r")
		cmd.Stdin = strings.NewReader(stamp + "." + body)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("openssl: %v", err)
		}
		want := "sha256=" + strings.Fields(string(out))[0]
		if sig != want {
			t.Fatalf("body %q: signature %s, OpenSSL says %s", body, sig, want)
		}
		if err := Verify(secret, stamp, sig, []byte(body), ts.Add(time.Minute)); err != nil {
			t.Fatalf("verify: %v", err)
		}
	}
}

func TestVerifyRefuses(t *testing.T) {
	secret := []byte("0123456789abcdef-secret")
	ts := time.Unix(1796636312, 0)
	body := []byte(`{"event":"rollout_paused"}`)
	stamp, sig := Sign(secret, ts, body)
	for _, tc := range []struct {
		name             string
		secret           []byte
		stamp, sig, body string
		now              time.Time
		want             error
		wantText         string
	}{
		{"another body", secret, stamp, sig, `{"event":"rollout_resumed"}`, ts, ErrBadSignature, ""},
		{"another secret", []byte("another-secret-0123"), stamp, sig, string(body), ts, ErrBadSignature, ""},
		{"another timestamp", secret, "1796636313", sig, string(body), ts, ErrBadSignature, ""},
		{"replayed later", secret, stamp, sig, string(body), ts.Add(ReplayWindow + time.Second), ErrStale, ""},
		{"from the future", secret, stamp, sig, string(body), ts.Add(-ReplayWindow - time.Second), ErrStale, ""},
		{"no scheme", secret, stamp, strings.TrimPrefix(sig, "sha256="), string(body), ts, nil, "want sha256=<hex>"},
		{"not hex", secret, stamp, "sha256=zz", string(body), ts, nil, "invalid byte"},
		{"timestamp not a number", secret, "12e9", sig, string(body), ts, nil, "not a Unix time in seconds"},
		{"timestamp padded", secret, "0" + stamp, sig, string(body), ts, nil, "not a Unix time in seconds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Verify(tc.secret, tc.stamp, tc.sig, []byte(tc.body), tc.now)
			switch {
			case err == nil:
				t.Fatal("accepted")
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Fatalf("error %v, want %v", err, tc.want)
			case tc.wantText != "" && !strings.Contains(err.Error(), tc.wantText):
				t.Fatalf("error %v, want it to say %q", err, tc.wantText)
			}
		})
	}
}
