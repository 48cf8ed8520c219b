package main

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCLIAgainstServer(t *testing.T) {
	ts := startTestServer(t, "")
	s, dataDir := ts.Server, ts.dataDir
	cli := func(args ...string) (int, string, string) { return ts.cli("", args...) }

	code, out, errs := cli("token", "create", "--name", "edge-north", "--label", "wave=1", "--label", "region=north", "-o", "json")
	if code != 0 {
		t.Fatalf("token create: %d %s", code, errs)
	}
	var tok struct {
		ID, Token string
		Labels    map[string]string
	}
	json.Unmarshal([]byte(out), &tok)
	if tok.Token == "" || tok.Labels["region"] != "north" {
		t.Fatalf("token create printed %s", out)
	}
	code, out, _ = cli("token", "list")
	if code != 0 || !strings.Contains(out, "edge-north") || !strings.Contains(out, "region=north,wave=1") || strings.Contains(out, tok.Token) {
		t.Fatalf("token list: %d\n%s", code, out)
	}
	code, _, errs = cli("token", "create", "--name", "bad", "--label", "a b=x")
	if code != 3 || !strings.Contains(errs, "whitespace") {
		t.Fatalf("bad label: %d %s", code, errs)
	}
	code, out, _ = cli("agents", "list")
	if code != 0 || !strings.HasPrefix(out, "INSTANCE UID") {
		t.Fatalf("agents list: %d %s", code, out)
	}
	code, out, errs = cli("console", "link")
	if code != 0 || !strings.HasPrefix(out, "http://"+s.AdminAddr().String()+"/login#token=") || !strings.Contains(errs, "one-time login link") {
		t.Fatalf("console link: %d %q %q", code, out, errs)
	}
	// The server's own config file says where it is: admin_listen (every
	// interface reached on loopback) and data_dir, flags and variables
	// unset; a bad file is named.
	_, port, _ := net.SplitHostPort(s.AdminAddr().String())
	cfgFile := filepath.Join(t.TempDir(), "myriarchd.yaml")
	os.WriteFile(cfgFile, []byte("admin_listen: 0.0.0.0:"+port+"\ndata_dir: "+dataDir+"\n"), 0o600)
	var cout, cerr bytes.Buffer
	if code := run([]string{"agents", "list", "--config", cfgFile}, &cout, &cerr); code != 0 || !strings.HasPrefix(cout.String(), "INSTANCE UID") {
		t.Fatalf("agents list --config: %d %s %s", code, cout.String(), cerr.String())
	}
	os.WriteFile(cfgFile, []byte("admin_listen: [\n"), 0o600)
	if code := run([]string{"token", "list", "--config", cfgFile}, &cout, &cerr); code != 1 || !strings.Contains(cerr.String(), cfgFile) {
		t.Fatalf("token list with a broken --config: %d %s", code, cerr.String())
	}
	code, _, errs = cli("agents", "show", "00000000-0000-0000-0000-000000000000")
	if code != 3 || !strings.Contains(errs, "404") {
		t.Fatalf("agents show unknown: %d %s", code, errs)
	}
	if code, _, _ = cli("token", "revoke", tok.ID); code != 0 {
		t.Fatalf("token revoke: %d", code)
	}
	code, out, _ = cli("tokens", "list", "--output", "json")
	if code != 0 || !strings.Contains(out, "revokedAt") {
		t.Fatalf("revoked token not shown: %s", out)
	}
	var buf bytes.Buffer
	if run([]string{"serve", "--log-format", "xml", "--data-dir", t.TempDir()}, &buf, &buf) != 2 || !strings.Contains(buf.String(), "text or json") {
		t.Fatalf("bad --log-format: %s", buf.String())
	}
}
