package audit_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/audit"
)

const adminToken = "myradm_test_token_of_at_least_32_chars"

// serveTrail serves tr's routes on a real admin API.
func serveTrail(t *testing.T, tr *audit.Trail) *httptest.Server {
	t.Helper()
	api := admin.New(admin.Deps{AdminToken: adminToken})
	tr.Routes(api)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return srv
}

// get calls the API and decodes a JSON answer.
func get(t *testing.T, srv *httptest.Server, path string, out any) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: %v: %s", path, err, b)
	}
	return resp.StatusCode
}

type pageDoc struct {
	Records []map[string]any `json:"records"`
	Next    *string          `json:"next"`
}

// GET /api/v1/audit: records newest first with exactly the members of a
// record, filters, and a cursor through every page; no cursor after the
// last page.
func TestListAPI(t *testing.T) {
	st, _ := backends[0].open(t)
	clk := newClock()
	tr := audit.New(audit.Options{Store: st, Now: clk.Now})
	recs := appendN(t, tr, 0, 25)
	srv := serveTrail(t, tr)

	members := []string{"id", "time", "actor", "role", "via", "action", "target", "source", "requestId", "outcome", "detail", "prev", "hash"}
	var ids []float64
	path := "/api/v1/audit?limit=10"
	for pages := 0; ; pages++ {
		var p pageDoc
		if code := get(t, srv, path, &p); code != http.StatusOK {
			t.Fatalf("%s: %d", path, code)
		}
		for _, r := range p.Records {
			keys := slices.Sorted(func(yield func(string) bool) {
				for k := range r {
					if !yield(k) {
						return
					}
				}
			})
			if want := slices.Sorted(slices.Values(members)); !slices.Equal(keys, want) {
				t.Fatalf("a record's members %v, want %v", keys, want)
			}
			ids = append(ids, r["id"].(float64))
		}
		if p.Next == nil {
			if pages != 2 {
				t.Fatalf("%d pages, want 3", pages+1)
			}
			break
		}
		path = "/api/v1/audit?limit=10&cursor=" + url.QueryEscape(*p.Next)
	}
	for i, id := range ids {
		if id != float64(25-i) {
			t.Fatalf("ids %v, want 25 down to 1", ids)
		}
	}

	at := func(i int) string { return recs[i].Time.Format(time.RFC3339Nano) }
	filters := []struct {
		query string
		want  func(r audit.Record) bool
	}{
		{"actor=user-1", func(r audit.Record) bool { return r.Actor == "user-1" }},
		{"action=fleet.pause", func(r audit.Record) bool { return r.Action == "fleet.pause" }},
		{"target=fleet:edge-3", func(r audit.Record) bool { return r.Target == "fleet:edge-3" }},
		{"outcome=denied", func(r audit.Record) bool { return r.Outcome == "denied" }},
		{"since=" + url.QueryEscape(at(20)), func(r audit.Record) bool { return r.ID >= 21 }},
		{"until=" + url.QueryEscape(at(3)), func(r audit.Record) bool { return r.ID <= 3 }},
		{"actor=user-0&outcome=ok&since=" + url.QueryEscape(at(5)), func(r audit.Record) bool {
			return r.Actor == "user-0" && r.Outcome == "ok" && r.ID >= 6
		}},
		{"actor=&target=", func(audit.Record) bool { return true }},
	}
	for _, f := range filters {
		var want []float64
		for i := len(recs) - 1; i >= 0; i-- {
			if f.want(recs[i]) {
				want = append(want, float64(recs[i].ID))
			}
		}
		var p pageDoc
		if code := get(t, srv, "/api/v1/audit?"+f.query, &p); code != http.StatusOK {
			t.Fatalf("%s: %d", f.query, code)
		}
		var got []float64
		for _, r := range p.Records {
			got = append(got, r["id"].(float64))
		}
		if !slices.Equal(got, want) || p.Next != nil {
			t.Errorf("%s: ids %v (next %v), want %v", f.query, got, p.Next, want)
		}
	}
}

// Every malformed parameter is a 400 naming it.
func TestListAPIRefusesBadParameters(t *testing.T) {
	st, _ := backends[0].open(t)
	tr := audit.New(audit.Options{Store: st})
	appendN(t, tr, 0, 3)
	srv := serveTrail(t, tr)
	cases := []struct{ query, names string }{
		{"limit=0", "limit"},
		{"limit=1001", "limit"},
		{"limit=-5", "limit"},
		{"limit=ten", "limit"},
		{"limit=1.5", "limit"},
		{"limit=1&limit=2", "limit"},
		{"cursor=not-a-cursor!", "cursor"},
		{"cursor=AAAA", "cursor"},
		{"cursor=AAAAAAAAAAAAAAAAAAAAAA", "cursor"}, // 16 zero bytes: no record has id 0
		{"since=yesterday", "since"},
		{"since=2025-06-01", "since"},
		{"until=2025-13-01T00:00:00Z", "until"},
		{"until=9999-01-01T00:00:00Z", "until"},
		{"since=2025-06-02T00:00:00Z&until=2025-06-01T00:00:00Z", "until"},
		{"since=2025-06-01T00:00:00Z&until=2025-06-01T00:00:00Z", "until"},
		{"outcome=maybe", "outcome"},
		{"outcome=OK", "outcome"},
		{"actor=" + strings.Repeat("a", audit.MaxActor+1), "actor"},
		{"action=" + strings.Repeat("a", audit.MaxAction+1), "action"},
		{"target=" + strings.Repeat("a", audit.MaxTarget+1), "target"},
		{"actr=alice", "actr"},
		{"actor=a&actor=b", "actor"},
	}
	for _, c := range cases {
		var e admin.ErrorBody
		if code := get(t, srv, "/api/v1/audit?"+c.query, &e); code != http.StatusBadRequest || !strings.HasPrefix(strings.Trim(e.Error, `"`), c.names) {
			t.Errorf("%.60s: %d %q, want 400 naming %s", c.query, code, e.Error, c.names)
		}
	}
}

// GET /api/v1/audit/verify answers {"ok": true, "records": N}, or ok
// false with the first bad record and why.
func TestVerifyAPI(t *testing.T) {
	st, db := backends[0].open(t)
	tr := audit.New(audit.Options{Store: st})
	appendN(t, tr, 0, 4)
	srv := serveTrail(t, tr)
	var v map[string]any
	if code := get(t, srv, "/api/v1/audit/verify", &v); code != http.StatusOK || len(v) != 2 || v["ok"] != true || v["records"] != 4.0 {
		t.Fatalf("verify: %d %v", code, v)
	}
	for _, q := range db.unguard {
		db.run(q)
	}
	db.run(`UPDATE audit SET outcome = 'ok' WHERE id = 2`)
	v = nil
	if code := get(t, srv, "/api/v1/audit/verify", &v); code != http.StatusOK || len(v) != 4 || v["ok"] != false ||
		v["records"] != 1.0 || v["firstBad"] != 2.0 || !strings.Contains(v["reason"].(string), "changed") {
		t.Fatalf("verify after a change: %d %v", code, v)
	}
}
