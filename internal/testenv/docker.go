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
// (test/docker/up.sh); the client is closed when the test ends. Tests of
// every package share the engine; the test holds it shared (see
// DockerAlone) until it ends.
func Docker(t testing.TB) *client.Client {
	t.Helper()
	holdEngine(t, false)
	return dockerClient(t)
}

// DockerAlone is Docker for a test that watches every container on the
// engine (a docker provider following the whole engine): it waits until no
// other test, in this process or another, holds the engine, and keeps it
// to itself until it ends.
func DockerAlone(t testing.TB) *client.Client {
	t.Helper()
	holdEngine(t, true)
	return dockerClient(t)
}

func dockerClient(t testing.TB) *client.Client {
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
