package server_test

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/servertest"
)

// Webhooks are checked at load; until myriarchd sends to them, it says so
// rather than take them in silence.
func TestWebhooksAreSaidNotSent(t *testing.T) {
	est := newEstate(t)
	est.mkdir("notifications")
	est.write("ops.secret", "0123456789abcdef\n")
	est.write("notifications/ops.yaml", "url: https://hooks.example.com/x\nsecretFile: ops.secret\nevents: [config_failed]\n")
	var logs syncBuffer
	servertest.StartServer(t, server.Options{Estate: est.dir, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if out := logs.String(); !strings.Contains(out, "webhooks in notifications/ are checked but not sent by this myriarchd") || !strings.Contains(out, "webhooks=1") {
		t.Fatalf("log:\n%s", out)
	}
}
