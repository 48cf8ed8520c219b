package admin_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/registry"
)

type sortedPage struct {
	Agents []struct {
		InstanceUID string            `json:"instanceUid"`
		Kind        string            `json:"kind"`
		Online      bool              `json:"online"`
		Attributes  map[string]string `json:"attributes"`
		Events      []admin.Event     `json:"events"`
	} `json:"agents"`
	Total *int    `json:"total"`
	Next  *string `json:"next"`
}

func (p sortedPage) hosts() []string {
	var out []string
	for _, a := range p.Agents {
		out = append(out, a.Attributes["host.name"])
	}
	return out
}

func getPage(t *testing.T, f *fleet, query string) sortedPage {
	t.Helper()
	code, body := call(t, f.api, "/api/v1/agents?"+query)
	var p sortedPage
	if err := json.Unmarshal(body, &p); code != 200 || err != nil {
		t.Fatalf("%s: %d %v %s", query, code, err, body)
	}
	return p
}

func TestListingFiltersAndSortedPages(t *testing.T) {
	f := newFleet(t, 30) // host-000000…29, a collector and an updater each
	defer f.close()
	for _, uid := range f.collectors[:5] {
		f.reg.Disconnected(uid)
	}
	col3 := f.collectors[3].String()
	for _, tc := range []struct {
		query string
		total int
		check func(t *testing.T, p sortedPage)
	}{
		{"offset=0", 60, nil},
		{"offset=0&kind=collector", 30, nil},
		{"offset=0&version=0.149.1", 30, nil},
		{"offset=0&online=false", 5, func(t *testing.T, p sortedPage) {
			for _, a := range p.Agents {
				if a.Online || a.Kind != "collector" {
					t.Errorf("online=false returned %+v", a)
				}
			}
		}},
		{"offset=0&online=true&kind=collector", 25, nil},
		{"offset=0&attr=site.name%3Dsite-003", 1, func(t *testing.T, p sortedPage) {
			mustEqual(t, "uid", p.Agents[0].InstanceUID, col3)
		}},
		{"offset=0&attr=labels.wave%3D1", 60, nil},
		{"offset=0&attr=labels.wave%3D2", 0, nil},
		{"offset=0&attr=site.name%3D", 0, nil},
		{"offset=0&q=HOST-00001", 20, nil},
		{"offset=0&q=" + strings.ToUpper(col3[:13]), 1, func(t *testing.T, p sortedPage) {
			mustEqual(t, "uid", p.Agents[0].InstanceUID, col3)
		}},
		{"sort=host&kind=updater&limit=4&offset=8", 30, func(t *testing.T, p sortedPage) {
			mustEqual(t, "hosts", strings.Join(p.hosts(), ","), "host-000008,host-000009,host-000010,host-000011")
		}},
		{"sort=-host&kind=collector&limit=2", 30, func(t *testing.T, p sortedPage) {
			mustEqual(t, "hosts", strings.Join(p.hosts(), ","), "host-000029,host-000028")
			if len(p.Agents[0].Events) == 0 {
				t.Error("a sorted page lost the histories")
			}
		}},
		{"sort=version&limit=1", 60, func(t *testing.T, p sortedPage) {
			mustEqual(t, "lowest version", p.Agents[0].Attributes["service.version"], "0.1.0")
		}},
		{"sort=-online&limit=60", 60, func(t *testing.T, p sortedPage) {
			if !p.Agents[54].Online || p.Agents[55].Online {
				t.Errorf("online agents do not come first")
			}
		}},
		{"sort=host&limit=3&events=false", 60, func(t *testing.T, p sortedPage) {
			for _, a := range p.Agents {
				if len(a.Events) != 0 {
					t.Errorf("events=false returned %d events", len(a.Events))
				}
			}
		}},
		{"sort=lastSeen&offset=1000&limit=5", 60, func(t *testing.T, p sortedPage) {
			if len(p.Agents) != 0 {
				t.Errorf("an offset past the end returned %d agents", len(p.Agents))
			}
		}},
	} {
		t.Run(tc.query, func(t *testing.T) {
			p := getPage(t, f, tc.query)
			if p.Total == nil || *p.Total != tc.total || p.Next != nil {
				t.Fatalf("total %v, next %v; want total %d", p.Total, p.Next, tc.total)
			}
			if !strings.Contains(tc.query, "limit") && len(p.Agents) != tc.total {
				t.Fatalf("%d agents without a limit, total %d", len(p.Agents), tc.total)
			}
			if tc.check != nil {
				tc.check(t, p)
			}
		})
	}

	// Paging through a sorted order visits every agent once.
	var all []string
	for off := 0; ; off += 7 {
		p := getPage(t, f, "sort=host&limit=7&offset="+strconv.Itoa(off))
		for _, a := range p.Agents {
			all = append(all, a.InstanceUID)
		}
		if len(p.Agents) < 7 {
			break
		}
	}
	sorted := slices.Clone(all)
	slices.Sort(sorted)
	if len(all) != 60 || len(slices.Compact(sorted)) != 60 {
		t.Fatalf("paging visited %d agents, %d distinct", len(all), len(slices.Compact(sorted)))
	}

	// Filters apply to the UID-order listing too, which carries no total.
	p := getPage(t, f, "online=false")
	if len(p.Agents) != 5 || p.Total != nil {
		t.Fatalf("online=false without sort: %d agents, total %v", len(p.Agents), p.Total)
	}
}

func TestListingRefusesBadFilterAndSortValues(t *testing.T) {
	f := newFleet(t, 1)
	defer f.close()
	for _, tc := range []struct{ query, want string }{
		{"online=maybe", `online must be true or false, got "maybe"`},
		{"attr=site.type", `attr must be KEY=VALUE`},
		{"attr=%3Dedge", `attr must be KEY=VALUE`},
		{"q=" + strings.Repeat("x", 4097), "q must be at most 4096 bytes"},
		{"version=1&version=2", "version may be given once"},
		{"sort=colour", `sort must be one of uid, host, kind, version, online, lastSeen, firstSeen`},
		{"sort=host&sort=kind", `got "kind"`},
		{"offset=-1", `offset must be a single integer`},
		{"offset=x", `got "x"`},
		{"events=no", `events must be true or false, got "no"`},
		{"sort=host&after=" + f.collectors[0].String(), "after pages in instance UID order"},
	} {
		code, body := call(t, f.api, "/api/v1/agents?"+tc.query)
		var e admin.ErrorBody
		if json.Unmarshal(body, &e); code != http.StatusBadRequest || !strings.Contains(e.Error, tc.want) {
			t.Errorf("%.40s: %d %s; want 400 with %q", tc.query, code, body, tc.want)
		}
	}
}

func TestSummaryCountsKindsVersionsAndFeatures(t *testing.T) {
	f := newFleet(t, 4)
	defer f.close()
	f.reg.Disconnected(f.collectors[0])
	f.api.AddSummary("feature", func() any { return map[string]int{"x": 1} })
	code, body := call(t, f.api, "/api/v1/summary")
	var s struct {
		Agents            map[string]registry.Count `json:"agents"`
		CollectorVersions map[string]registry.Count `json:"collectorVersions"`
		Feature           map[string]int            `json:"feature"`
	}
	if err := json.Unmarshal(body, &s); code != 200 || err != nil {
		t.Fatalf("summary: %d %v %s", code, err, body)
	}
	want := registry.Count{Total: 4, Online: 3}
	if s.Agents["collector"] != want || s.Agents["updater"] != (registry.Count{Total: 4, Online: 4}) ||
		s.CollectorVersions["0.149.1"] != want || len(s.CollectorVersions) != 1 || s.Feature["x"] != 1 {
		t.Fatalf("summary %s", body)
	}
}

func TestFallbackServesWhatNoRouteMatches(t *testing.T) {
	f := newFleet(t, 1)
	defer f.close()
	f.api.SetFallback(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("console " + r.URL.Path)) }))
	for path, want := range map[string]string{
		"/":               "console /",
		"/agents":         "console /agents",
		"/api/v1/nothing": "no such route",
		"/api/":           "no such route",
		"/healthz":        "ok",
	} {
		rec := httptest.NewRecorder()
		f.api.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("GET %s = %d %q, want %q", path, rec.Code, rec.Body, want)
		}
	}
}

func TestAgentShowsWhereLabelsComeFrom(t *testing.T) {
	f := newFleet(t, 1)
	defer f.close()
	_, body := call(t, f.api, "/api/v1/agents/"+f.collectors[0].String())
	var a admin.Agent
	if err := json.Unmarshal(body, &a); err != nil || a.LabelSources["wave"] != registry.LabelFromToken {
		t.Fatalf("labelSources %v (%v)", a.LabelSources, err)
	}
	if _, list := call(t, f.api, "/api/v1/agents"); strings.Contains(string(list), "labelSources") {
		t.Fatal("listings carry labelSources")
	}
}

func mustEqual[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}
