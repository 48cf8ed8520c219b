package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/myriarch/myriarch/internal/admincli"
	"github.com/myriarch/myriarch/internal/testenv"
	"github.com/myriarch/myriarch/server/audit"
)

// documentedPython is the check of server/audit's package documentation.
func documentedPython(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "server", "audit", "doc.go"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(doc))
	for in := false; sc.Scan(); {
		in = in || sc.Text() == "//\timport hashlib, json, sys"
		code, ok := strings.CutPrefix(sc.Text(), "//\t")
		if in && !ok {
			break
		}
		if in {
			lines = append(lines, code)
		}
	}
	if len(lines) < 5 {
		t.Fatal("no Python in server/audit/doc.go")
	}
	return strings.Join(lines, "\n") + "\n"
}

// audit prints the trail following every page: JSON lines that the
// documented Python proves, a table whose cells cannot move the terminal,
// the filters and --limit passed on; a bad filter is the server's 400,
// a bad flag a usage error; audit verify exits 1 once a row is changed.
func TestAuditCommand(t *testing.T) {
	ts := startTestServer(t, "")
	s, dataDir := ts.Server, ts.dataDir
	for i := range 7 {
		r := audit.Record{Actor: []string{"alice", "bob"}[i%2], Role: "admin", Via: "cli", Action: "token.create", Target: "token:t" + string(rune('a'+i)),
			Source: "127.0.0.1:5555", Outcome: []string{"ok", "denied", "error"}[i%3], Detail: "<b>\x1b[31mred\x1b[0m\nnext line</b>"}
		if _, err := s.Audit().Append(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}

	target, _ := url.Parse("http://" + s.AdminAddr().String())
	var mu sync.Mutex
	var queries []url.Values // guarded by mu
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		queries = append(queries, r.URL.Query())
		mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	taken := func() []url.Values {
		mu.Lock()
		defer mu.Unlock()
		q := queries
		queries = nil
		return q
	}
	defer func(n int) { admincli.AuditPageSize = n }(admincli.AuditPageSize)
	admincli.AuditPageSize = 3
	cli := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(append(args, "--admin", front.URL, "--data-dir", dataDir), &out, &errb)
		return code, out.String(), errb.String()
	}

	code, out, errs := cli("audit", "--output", "json")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != 0 || len(lines) != 7 {
		t.Fatalf("audit --json: %d, %d lines\n%s%s", code, len(lines), out, errs)
	}
	for i, l := range lines {
		var r audit.Record
		if err := json.Unmarshal([]byte(l), &r); err != nil || r.ID != int64(7-i) || r.Hash == "" || r.Prev == "" {
			t.Fatalf("line %d: %s (%v)", i, l, err)
		}
	}
	if q := taken(); len(q) != 3 || q[0].Get("limit") != "3" || q[0].Has("cursor") || q[1].Get("cursor") == "" || q[2].Get("cursor") == q[1].Get("cursor") {
		t.Fatalf("requests %v, want three pages of 3", q)
	}
	py := exec.Command(testenv.Tool(t, "python3", "python3"), "-c", documentedPython(t))
	py.Stdin = strings.NewReader(out)
	if res, err := py.CombinedOutput(); err != nil || !strings.Contains(string(res), "7 records chained") {
		t.Fatalf("the documented Python on audit --json: %v\n%s", err, res)
	}

	code, out, errs = cli("audit", "--actor", "alice", "--outcome", "ok", "--since", "1h")
	rows := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(rows) != 3 || !strings.HasPrefix(rows[0], "ID ") || !strings.HasPrefix(rows[1], "7 ") || !strings.HasPrefix(rows[2], "1 ") {
		t.Fatalf("audit --actor alice --outcome ok: %d\n%s%s", code, out, errs)
	}
	if strings.Contains(out, "\x1b") || !strings.Contains(rows[1], "<b> [31mred [0m next line</b>") {
		t.Fatalf("a cell kept its control characters: %q", rows[1])
	}
	if q := taken(); len(q) != 1 || q[0].Get("actor") != "alice" || q[0].Get("outcome") != "ok" || q[0].Get("since") == "" {
		t.Fatalf("requests %v", q)
	}

	if code, out, _ = cli("audit", "--limit", "2", "-o", "json"); code != 0 || strings.Count(out, "\n") != 2 {
		t.Fatalf("audit --limit 2: %d\n%s", code, out)
	}
	if q := taken(); len(q) != 1 || q[0].Get("limit") != "2" {
		t.Fatalf("--limit 2 took %v", q)
	}
	if code, out, _ = cli("audit", "--until", "1h"); code != 0 || !strings.HasPrefix(out, "ID ") || strings.Count(out, "\n") != 1 {
		t.Fatalf("audit --until 1h: %d, want the header alone:\n%s", code, out)
	}
	if code, _, errs = cli("audit", "--outcome", "maybe"); code != 3 || !strings.Contains(errs, "400") || !strings.Contains(errs, "query parameter outcome") {
		t.Fatalf("audit --outcome maybe: %d %s", code, errs)
	}

	code, out, errs = cli("audit", "verify", "--output", "json")
	if code != 0 || !strings.Contains(out, `"ok": true`) || !strings.Contains(out, `"records": 7`) {
		t.Fatalf("audit verify: %d %s %s", code, out, errs)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dataDir, "myriarch.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{`DROP TRIGGER audit_never_changed`, `UPDATE audit SET outcome = 'ok' WHERE id = 3`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(q, err)
		}
	}
	code, out, errs = cli("audit", "verify", "--output", "json")
	if code != 1 || !strings.Contains(out, `"firstBad": 3`) || !strings.Contains(errs, "record 3 does not follow") {
		t.Fatalf("audit verify after a change: %d %s %s", code, out, errs)
	}
}
