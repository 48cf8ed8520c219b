package admin_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/store"
)

func call(t *testing.T, h http.Handler, path string) (int, []byte) {
	t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	req.Header.Set("Authorization", "Bearer adm")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.Bytes()
}

// oldListing renders the whole list the way the API did before it streamed:
// every agent through AgentJSON, one indented document.
func oldListing(f *fleet) []byte {
	list := f.reg.List("", true)
	out := make([]*admin.Agent, 0, len(list))
	for i := range list {
		out = append(out, f.api.AgentJSON(&list[i]))
	}
	rec := httptest.NewRecorder()
	admin.WriteJSON(rec, http.StatusOK, map[string]any{"agents": out})
	return rec.Body.Bytes()
}

// oddAgents registers agents whose strings need every kind of escaping, and
// kinds and fields the pairs do not have.
func oddAgents(t *testing.T, f *fleet) {
	t.Helper()
	cred := store.Credential{Kind: "certificate", ID: `CN=a&b <x> "q"`}
	now := uint64(time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC).UnixNano())
	descs := []*protobufs.AgentDescription{
		{IdentifyingAttributes: []*protobufs.KeyValue{testkit.KV("service.name", "io.opentelemetry.operator-opamp-bridge"), testkit.KV("service.version", "1.0\u2028b")},
			NonIdentifyingAttributes: []*protobufs.KeyValue{testkit.KV("host.name", "h\tö\x01<&>"), testkit.KV("bad.utf8", "a\xffb"), testkit.KV("sep", "x\u2029y\\z"), testkit.KV("amp", "a&b"), testkit.KV("lt", "<x"), testkit.KV("gt", "x>"), testkit.KV("q", `say "hi"`), testkit.KV("bs", `c:\\`)}},
		{IdentifyingAttributes: []*protobufs.KeyValue{testkit.KV("service.name", "myriarch-updater")},
			NonIdentifyingAttributes: []*protobufs.KeyValue{testkit.KV("dev.myriarch.install.mode", "container"),
				testkit.KV("dev.myriarch.collector.image.digest", "sha256:"+strings.Repeat("0", 64)), testkit.KV("dev.myriarch.collector.instance_uid", "not-a-uid")}},
		{IdentifyingAttributes: []*protobufs.KeyValue{testkit.KV("service.name", "something")}},
		nil,
	}
	for i, d := range descs {
		m := &protobufs.AgentToServer{AgentDescription: d, Capabilities: uint64(i)}
		if i == 0 {
			m.Health = &protobufs.ComponentHealth{Healthy: false, Status: "degraded", LastError: "disk \"full\"", StartTimeUnixNano: now,
				ComponentHealthMap: map[string]*protobufs.ComponentHealth{
					"pipeline:b": {Healthy: true, StatusTimeUnixNano: now},
					"pipeline:a": {Healthy: false, LastError: "<boom>", ComponentHealthMap: map[string]*protobufs.ComponentHealth{"receiver:x": {}}},
				}}
		}
		uid := uuid.New()
		if _, err := f.reg.Report(uid, cred, m, i == 3, true); err != nil {
			t.Fatal(err)
		}
		f.reg.AddEvent(uid, "note", "line one\nline two → three")
	}
}

func TestListingIsTheOldDocument(t *testing.T) {
	f := newFleet(t, 40)
	defer f.close()
	oddAgents(t, f)
	code, got := call(t, f.api, "/api/v1/agents")
	if code != 200 {
		t.Fatalf("GET: %d %s", code, got)
	}
	want := oldListing(f)
	if string(got) != string(want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		t.Fatalf("streamed listing differs from encoding/json at byte %d:\ngot  …%s…\nwant …%s…",
			i, got[max(0, i-200):min(len(got), i+100)], want[max(0, i-200):min(len(want), i+100)])
	}
	var doc struct {
		Agents []admin.Agent `json:"agents"`
	}
	if err := json.Unmarshal(got, &doc); err != nil || len(doc.Agents) != 84 {
		t.Fatalf("listing: %d agents, %v", len(doc.Agents), err)
	}
}

func TestListingEmpty(t *testing.T) {
	f := newFleet(t, 0)
	defer f.close()
	code, got := call(t, f.api, "/api/v1/agents")
	if code != 200 || string(got) != string(oldListing(f)) || string(got) != "{\n  \"agents\": []\n}\n" {
		t.Fatalf("empty listing: %d %q", code, got)
	}
}

type page struct {
	Agents []struct {
		InstanceUID string `json:"instanceUid"`
		Kind        string `json:"kind"`
	} `json:"agents"`
	Next *string `json:"next"`
}

func TestListingPages(t *testing.T) {
	f := newFleet(t, 25)
	defer f.close()
	_, full := call(t, f.api, "/api/v1/agents")
	var all page
	if err := json.Unmarshal(full, &all); err != nil || len(all.Agents) != 50 || all.Next != nil {
		t.Fatalf("full listing: %d agents, next %v, %v", len(all.Agents), all.Next, err)
	}
	for _, tc := range []struct {
		name  string
		query string
		limit int
		want  int // agents over all pages
	}{
		{"uneven pages", "", 7, 50},
		{"one page exactly", "", 50, 50},
		{"pages of one", "", 1, 50},
		{"collectors", "&kind=collector", 6, 25},
		{"updaters in one page", "&kind=updater", 10000, 25},
		{"no bridges", "&kind=bridge", 3, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var uids []string
			after, pages := "", 0
			for {
				path := "/api/v1/agents?limit=" + strconv.Itoa(tc.limit) + tc.query
				if after != "" {
					path += "&after=" + after
				}
				code, body := call(t, f.api, path)
				var p page
				if err := json.Unmarshal(body, &p); code != 200 || err != nil {
					t.Fatalf("%s: %d %v %s", path, code, err, body)
				}
				pages++
				if len(p.Agents) > tc.limit {
					t.Fatalf("%s: %d agents, limit %d", path, len(p.Agents), tc.limit)
				}
				for _, a := range p.Agents {
					uids = append(uids, a.InstanceUID)
					if kind := strings.TrimPrefix(tc.query, "&kind="); kind != "" && a.Kind != kind {
						t.Fatalf("%s returned a %s", path, a.Kind)
					}
				}
				if p.Next == nil {
					break
				}
				if *p.Next != p.Agents[len(p.Agents)-1].InstanceUID {
					t.Fatalf("next %s is not the page's last agent %s", *p.Next, p.Agents[len(p.Agents)-1].InstanceUID)
				}
				after = *p.Next
			}
			if len(uids) != tc.want {
				t.Fatalf("pages returned %d agents, want %d", len(uids), tc.want)
			}
			if wantPages := max(1, (tc.want+tc.limit-1)/tc.limit); pages != wantPages {
				t.Fatalf("%d pages, want %d", pages, wantPages)
			}
			var want []string
			for _, a := range all.Agents {
				if kind := strings.TrimPrefix(tc.query, "&kind="); kind == "" || a.Kind == kind {
					want = append(want, a.InstanceUID)
				}
			}
			if strings.Join(uids, ",") != strings.Join(want, ",") {
				t.Fatalf("pages do not add up to the full listing in order:\n%v\n%v", uids, want)
			}
		})
	}

	// after without limit: the rest of the list, in order, no "next".
	mid := all.Agents[19].InstanceUID
	code, body := call(t, f.api, "/api/v1/agents?after="+mid)
	var rest page
	if err := json.Unmarshal(body, &rest); code != 200 || err != nil || len(rest.Agents) != 30 ||
		rest.Agents[0].InstanceUID != all.Agents[20].InstanceUID || rest.Next != nil || strings.Contains(string(body), `"next"`) {
		t.Fatalf("after %s: %d %v %d agents %s", mid, code, err, len(rest.Agents), body[:min(len(body), 200)])
	}
	// An after that is no agent's UID still orders: everything above it.
	code, body = call(t, f.api, "/api/v1/agents?limit=5&after=ffffffff-ffff-ffff-ffff-ffffffffffff")
	if code != 200 || string(body) != "{\n  \"agents\": []\n}\n" {
		t.Fatalf("after the last UID: %d %s", code, body)
	}
}

func TestListingBadParameters(t *testing.T) {
	f := newFleet(t, 1)
	defer f.close()
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"limit=0", []string{"limit", `"0"`}},
		{"limit=10001", []string{"limit", `"10001"`, "10000"}},
		{"limit=-3", []string{"limit", `"-3"`}},
		{"limit=ten", []string{"limit", `"ten"`}},
		{"limit=", []string{"limit", `""`}},
		{"limit=1.5", []string{"limit", `"1.5"`}},
		{"limit=5&limit=6", []string{"limit", `"6"`}},
		{"after=host-1", []string{"after", `"host-1"`, "UID"}},
		{"after=", []string{"after", `""`}},
		{"limit=5&after=00000000-0000-0000-0000", []string{"after", `"00000000-0000-0000-0000"`}},
		{"kind=bogus&limit=5", []string{"kind"}},
	} {
		code, body := call(t, f.api, "/api/v1/agents?"+tc.query)
		var e admin.ErrorBody
		if err := json.Unmarshal(body, &e); code != http.StatusBadRequest || err != nil {
			t.Errorf("%s: %d %s", tc.query, code, body)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(e.Error, w) {
				t.Errorf("%s: error %q does not mention %s", tc.query, e.Error, w)
			}
		}
	}
}
