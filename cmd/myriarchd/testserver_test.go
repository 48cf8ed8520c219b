package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/servertest"
)

// testServer is a real myriarchd on loopback for the commands' tests,
// closed when the test ends — after the agents the test starts later
// (cleanups run last first), so they stop while it still answers.
type testServer struct {
	*server.Server
	dataDir string
}

// startTestServer starts one with SQLite in a temporary directory and the
// estate dir ("" for none).
func startTestServer(t *testing.T, estate string) testServer {
	t.Helper()
	ts := testServer{dataDir: t.TempDir()}
	ts.Server = servertest.StartServer(t, server.Options{DataDir: ts.dataDir, Estate: estate})
	return ts
}

// cli runs a command against ts, its connection's flags after args;
// input is its stdin.
func (ts testServer) cli(input string, args ...string) (code int, stdout, stderr string) {
	stdin = strings.NewReader(input)
	conn := []string{"--admin", "http://" + ts.AdminAddr().String(), "--data-dir", ts.dataDir}
	var out, errb bytes.Buffer
	code = run(append(args[:len(args):len(args)], conn...), &out, &errb)
	return code, out.String(), errb.String()
}
