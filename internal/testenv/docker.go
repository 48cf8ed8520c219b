package testenv

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// Docker returns a client of the engine named by DOCKER_HOST, failing the
// test when none answers. `make test` starts a private engine when needed
// (test/docker/up.sh); the client is closed when the test ends.
func Docker(t testing.TB) *client.Client {
	t.Helper()
	cli, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err = cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
		cancel()
	}
	if err != nil {
		if cli != nil {
			cli.Close()
		}
		t.Fatalf("no Docker engine answers at DOCKER_HOST=%q: %v\nstart one with: export DOCKER_HOST=$(bash test/docker/up.sh)",
			os.Getenv("DOCKER_HOST"), err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}
