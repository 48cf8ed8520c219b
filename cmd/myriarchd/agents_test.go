package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/internal/admincli"
	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/server/store"
)

// agents list walks the pages and prints every agent once, in UID order.
func TestAgentsListPages(t *testing.T) {
	ts := startTestServer(t, "")
	s, dataDir := ts.Server, ts.dataDir
	cred := store.Credential{Kind: "certificate", ID: "CN=test"}
	var uids, collectors []string
	for i := range 7 {
		uid := uuid.New()
		name, caps := "myriarch-updater", uint64(protobufs.AgentCapabilities_AgentCapabilities_AcceptsPackages)
		if i%2 == 0 {
			name, caps = "otelcol-contrib", uint64(protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig)
			collectors = append(collectors, uid.String())
		}
		if _, err := s.Registry().Report(uid, cred, &protobufs.AgentToServer{Capabilities: caps, AgentDescription: &protobufs.AgentDescription{
			IdentifyingAttributes:    []*protobufs.KeyValue{testkit.KV("service.name", name), testkit.KV("service.version", "0.149.0")},
			NonIdentifyingAttributes: []*protobufs.KeyValue{testkit.KV("host.name", fmt.Sprintf("host-%d", i))},
		}}, false, true); err != nil {
			t.Fatal(err)
		}
		uids = append(uids, uid.String())
	}
	slices.Sort(uids)
	slices.Sort(collectors)

	// Count the pages through a proxy in front of the admin listener.
	target, _ := url.Parse("http://" + s.AdminAddr().String())
	var mu sync.Mutex
	var queries []string
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		queries = append(queries, r.URL.RawQuery)
		mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	defer func(n int) { admincli.AgentsPageSize = n }(admincli.AgentsPageSize)
	admincli.AgentsPageSize = 3

	cli := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(append(args, "--admin", front.URL, "--data-dir", dataDir), &out, &errb)
		return code, out.String(), errb.String()
	}
	code, out, errs := cli("agents", "list")
	if code != 0 {
		t.Fatalf("agents list: %d %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 8 || !strings.HasPrefix(lines[0], "INSTANCE UID") {
		t.Fatalf("agents list printed %d lines:\n%s", len(lines), out)
	}
	if !strings.Contains(lines[0], " SYNC ") {
		t.Fatalf("no SYNC column: %q", lines[0])
	}
	for i, l := range lines[1:] {
		if !strings.HasPrefix(l, uids[i]+" ") || !strings.Contains(l, "0.149.0") || !strings.Contains(l, "host-") {
			t.Fatalf("row %d is %q, want agent %s with version and host", i, l, uids[i])
		}
		// Collectors without a configured fleet are "none"; updaters have no sync state.
		if want := map[bool]string{true: " none ", false: " - "}[slices.Contains(collectors, uids[i])]; !strings.Contains(l, want) {
			t.Fatalf("row %d is %q, want %q in the SYNC column", i, l, want)
		}
	}
	mu.Lock()
	got := slices.Clone(queries)
	queries = nil
	mu.Unlock()
	want := []string{"limit=3", "limit=3&after=" + uids[2], "limit=3&after=" + uids[5]}
	if !slices.Equal(got, want) {
		t.Fatalf("requests %q, want %q", got, want)
	}

	code, out, errs = cli("agents", "list", "--kind", "collector", "--output", "json")
	var doc struct {
		Agents []struct {
			InstanceUID string `json:"instanceUid"`
			Kind        string `json:"kind"`
		} `json:"agents"`
	}
	if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil {
		t.Fatalf("agents list --json: %d %v %s", code, err, errs)
	}
	var gotUIDs []string
	for _, a := range doc.Agents {
		if a.Kind != "collector" {
			t.Fatalf("--kind collector listed a %s", a.Kind)
		}
		gotUIDs = append(gotUIDs, a.InstanceUID)
	}
	if !slices.Equal(gotUIDs, collectors) {
		t.Fatalf("--kind collector --json listed %v, want %v", gotUIDs, collectors)
	}
	mu.Lock()
	if len(queries) != 2 { // 4 collectors in pages of 3
		t.Fatalf("--kind collector took %d requests: %q", len(queries), queries)
	}
	mu.Unlock()

	code, _, errs = cli("agents", "list", "--kind", "bogus")
	if code != 3 || !strings.Contains(errs, "400") || !strings.Contains(errs, "query parameter kind") {
		t.Fatalf("agents list --kind bogus: %d %s", code, errs)
	}
}
