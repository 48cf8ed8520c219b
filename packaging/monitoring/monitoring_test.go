package monitoring

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/myriarch/myriarch/internal/testenv"
	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/servertest"
)

// TestMain fails the package when a test leaves a goroutine or a process running.
func TestMain(m *testing.M) { os.Exit(testkit.RunChecked(m.Run)) }

const (
	alertsFile    = "alerts.yaml"
	alertTests    = "alerts_test.yaml"
	dashboardFile = "grafana-dashboard.json"
	// metricsSource is where myriarchd registers its metrics.
	metricsSource = "../../server/metrics"
)

// alertNames are the alerts alerts.yaml must define.
var alertNames = []string{"MyriarchInstanceDown", "MyriarchInstanceNotReady", "MyriarchRolloutPaused", "MyriarchConfigsFailed",
	"MyriarchAgentsOffline", "MyriarchClusterNotifierLag", "MyriarchNotificationsGivenUp", "MyriarchNotificationsFailing"}

// clusterOnly are the metrics myriarchd reports only on a PostgreSQL store:
// its connection pool and what an instance does with the other instances'
// changes. The test's myriarchd runs on SQLite, so these are looked up in
// the source file of server/metrics that registers them instead.
var clusterOnly = map[string]string{
	"myriarch_cluster_changes_queued":           "cluster.go",
	"myriarch_cluster_changes_applied_total":    "cluster.go",
	"myriarch_cluster_resyncs_total":            "cluster.go",
	"myriarch_cluster_apply_failures_total":     "cluster.go",
	"myriarch_cluster_apply_seconds_total":      "cluster.go",
	"myriarch_store_connections":                "store.go",
	"myriarch_store_connections_max":            "store.go",
	"myriarch_store_acquires_total":             "store.go",
	"myriarch_store_acquires_waited_total":      "store.go",
	"myriarch_store_acquire_wait_seconds_total": "store.go",
}

// scrapeWait bounds how long TestMetricsExist scrapes for every name: a
// notification given up takes an event, a refused delivery, the webhook's
// removal and a retry 5 s later.
const scrapeWait = time.Minute

// scrapeSeries are made by Prometheus for every target it scrapes, not by myriarchd.
var scrapeSeries = map[string]bool{"up": true}

// promtool runs promtool with args in the package's directory and returns
// its output.
func promtool(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin := testenv.Tool(t, "promtool", "prometheus")
	out, err := exec.CommandContext(t.Context(), bin, args...).CombinedOutput()
	if err != nil {
		err = fmt.Errorf("promtool %s: %w", strings.Join(args, " "), err)
	}
	return string(out), err
}

func TestAlertRules(t *testing.T) {
	for _, args := range [][]string{{"check", "rules", alertsFile}, {"test", "rules", alertTests}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			if out, err := promtool(t, args...); err != nil {
				t.Errorf("%v\n%s", err, out)
			}
		})
	}
}

type rule struct {
	Alert, Record, Expr, For string
	Labels, Annotations      map[string]string
}

func loadAlerts(t *testing.T) []rule {
	t.Helper()
	b, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Name  string
			Rules []rule
		}
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", alertsFile, err)
	}
	if len(f.Groups) != 1 || f.Groups[0].Name != "myriarchd" {
		t.Fatalf("%s: want one group, myriarchd; have %d groups", alertsFile, len(f.Groups))
	}
	return f.Groups[0].Rules
}

func TestAlertsAreLabelledAndAnnotated(t *testing.T) {
	seen := map[string]bool{}
	for i, r := range loadAlerts(t) {
		where := fmt.Sprintf("%s: rule %d (%s)", alertsFile, i+1, r.Alert)
		if r.Alert == "" {
			t.Errorf("%s is not an alert (record %q)", where, r.Record)
			continue
		}
		seen[r.Alert] = true
		if s := r.Labels["severity"]; s != "critical" && s != "warning" {
			t.Errorf("%s: label severity is %q, want critical or warning", where, s)
		}
		for _, a := range []string{"summary", "description"} {
			if strings.TrimSpace(r.Annotations[a]) == "" {
				t.Errorf("%s has no %s annotation", where, a)
			}
		}
	}
	for _, name := range alertNames {
		if !seen[name] {
			t.Errorf("%s has no alert %s", alertsFile, name)
		}
	}
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		Expr  string `json:"expr"`
		RefID string `json:"refId"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's
}

type dashboard struct {
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []variable
	}
}

type variable struct {
	Name, Type string
	Query      json.RawMessage // a string, or an object with a query
}

// query is the variable's query, "" when none.
func (v variable) query() string {
	var s string
	if json.Unmarshal(v.Query, &s) != nil {
		var o struct{ Query string }
		_ = json.Unmarshal(v.Query, &o)
		s = o.Query
	}
	return s
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// panels returns every panel, those inside rows included.
func (d dashboard) panels() []panel {
	var out []panel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			out = append(out, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// variable returns the template variable name's type and query ("" when there is none).
func (d dashboard) variable(name string) (typ, query string) {
	for _, v := range d.Templating.List {
		if v.Name == name {
			return v.Type, v.query()
		}
	}
	return "", ""
}

func TestDashboardPanels(t *testing.T) {
	d := loadDashboard(t)
	if d.SchemaVersion < 39 {
		t.Errorf("%s: schemaVersion %d, want 39 or later", dashboardFile, d.SchemaVersion)
	}
	for _, v := range []struct{ name, typ, query string }{
		{"datasource", "datasource", "prometheus"},
		{"fleet", "query", "label_values(myriarch_rollout_members, fleet)"},
	} {
		if typ, q := d.variable(v.name); typ != v.typ || q != v.query {
			t.Errorf("%s: variable %s is a %q of %q, want a %q of %q", dashboardFile, v.name, typ, q, v.typ, v.query)
		}
	}
	ids := map[int]string{}
	for _, p := range d.panels() {
		where := fmt.Sprintf("%s: panel %d %q", dashboardFile, p.ID, p.Title)
		if other, dup := ids[p.ID]; dup {
			t.Errorf("%s has the id of panel %q", where, other)
		}
		ids[p.ID] = p.Title
		if strings.TrimSpace(p.Title) == "" {
			t.Errorf("%s has no title", where)
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource.UID != "${datasource}" {
			t.Errorf("%s: datasource %q, want the variable ${datasource}", where, p.Datasource.UID)
		}
		if len(p.Targets) == 0 {
			t.Errorf("%s has no target", where)
		}
		for _, tg := range p.Targets {
			if strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("%s: target %s has no expr", where, tg.RefID)
			}
		}
	}
}

// query is a PromQL expression and where it is.
type query struct{ where, expr string }

func alertQueries(rules []rule) []query {
	var out []query
	for _, r := range rules {
		out = append(out, query{alertsFile + ": alert " + r.Alert, r.Expr})
	}
	return out
}

// dashboardQueries are the panels' targets' expressions.
func dashboardQueries(d dashboard) []query {
	var out []query
	for _, p := range d.panels() {
		for _, tg := range p.Targets {
			out = append(out, query{fmt.Sprintf("%s: panel %q, target %s", dashboardFile, p.Title, tg.RefID), tg.Expr})
		}
	}
	return out
}

// labelValues is a variable's query of a label's values: label_values(selector, label).
var labelValues = regexp.MustCompile(`^\s*label_values\((.+),\s*\w+\s*\)\s*$`)

// variableSelectors are the selectors of the variables' label_values queries.
func variableSelectors(d dashboard) []query {
	var out []query
	for _, v := range d.Templating.List {
		if m := labelValues.FindStringSubmatch(v.query()); m != nil {
			out = append(out, query{dashboardFile + ": variable " + v.Name, m[1]})
		}
	}
	return out
}

// grafanaVar is a Grafana variable in a query: $name, ${name}, ${name:format}, [[name]].
var grafanaVar = regexp.MustCompile(`\$\{(\w+)(?::[^}]*)?\}|\$(\w+)|\[\[(\w+)\]\]`)

// expandGrafana replaces Grafana's variables by values PromQL accepts where
// they stand: a duration for the intervals, a word for the others (which
// stand in label matchers' strings).
func expandGrafana(expr string) string {
	return grafanaVar.ReplaceAllStringFunc(expr, func(v string) string {
		m := grafanaVar.FindStringSubmatch(v)
		switch name := m[1] + m[2] + m[3]; name {
		case "__interval", "__rate_interval", "__range":
			return "5m"
		default:
			return "x"
		}
	})
}

// Every query of the dashboard, made a recording rule, passes promtool.
func TestDashboardQueriesParse(t *testing.T) {
	qs := dashboardQueries(loadDashboard(t))
	if len(qs) == 0 {
		t.Fatalf("%s has no queries", dashboardFile)
	}
	var b strings.Builder
	b.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for i, q := range qs {
		expr, _ := json.Marshal(expandGrafana(q.expr)) // a JSON string is a YAML double-quoted one
		fmt.Fprintf(&b, "      - record: dashboard:panel_%d\n        expr: %s\n", i+1, expr)
	}
	path := filepath.Join(t.TempDir(), "dashboard-rules.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := promtool(t, "check", "rules", path); err != nil {
		var names strings.Builder
		for i, q := range qs {
			fmt.Fprintf(&names, "  dashboard:panel_%d is %s: %s\n", i+1, q.where, q.expr)
		}
		t.Errorf("%v\n%s\n%s", err, out, names.String())
	}
}

// promqlWords are PromQL's keywords and constants.
var promqlWords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "atan2": true, "inf": true, "nan": true}

// labelLists are the keywords a parenthesised list of label names follows.
var labelLists = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}

func isIdentStart(c byte) bool {
	return c == '_' || c == ':' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}
func isIdent(c byte) bool { return isIdentStart(c) || '0' <= c && c <= '9' }

// skipSpace returns the index of the first byte from i that is not white space.
func skipSpace(s string, i int) int {
	for i < len(s) && strings.IndexByte(" \t\r\n", s[i]) >= 0 {
		i++
	}
	return i
}

// word returns the identifier at i ("" when none).
func word(s string, i int) string {
	j := i
	for j < len(s) && isIdent(s[j]) {
		j++
	}
	if j == i || !isIdentStart(s[i]) {
		return ""
	}
	return s[i:j]
}

// metricNames returns the metric names an expression selects: identifiers
// that are not functions or aggregations (followed by "(" or by "by" or
// "without"), keywords, label names (in braces, or in the list after by,
// without, on, ignoring, group_left, group_right), strings or numbers and
// durations.
func metricNames(expr string) []string {
	var names []string
	inBraces := false
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			i++
			for i < len(expr) && expr[i] != c {
				if expr[i] == '\\' && c != '`' {
					i++
				}
				i++
			}
			i++
		case c == '#': // a comment
			for i < len(expr) && expr[i] != '\n' {
				i++
			}
		case c == '{' || c == '}':
			inBraces = c == '{'
			i++
		case '0' <= c && c <= '9' || c == '.': // 5m, 1.5, 1e3, 0x1f
			for i < len(expr) && (isIdent(expr[i]) || expr[i] == '.') {
				i++
			}
		case isIdentStart(c):
			w := word(expr, i)
			i += len(w)
			next := skipSpace(expr, i)
			opens := next < len(expr) && expr[next] == '('
			switch lw := strings.ToLower(w); {
			case inBraces:
			case labelLists[lw]:
				if opens {
					i = strings.IndexByte(expr[next:], ')') + next + 1
				}
			case promqlWords[lw], opens, labelLists[strings.ToLower(word(expr, next))]:
			default:
				names = append(names, w)
			}
		default:
			i++
		}
	}
	return names
}

func TestMetricNames(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`up{job="myriarchd"} == 0`, []string{"up"}},
		{`max by (rollout, fleet) (myriarch_rollout_paused) == 1`, []string{"myriarch_rollout_paused"}},
		{"sum by (webhook) (rate(a_total[1h])) > 0\nunless on (webhook)\nsum(rate(b_total[$__rate_interval])) by (webhook) > 0", []string{"a_total", "b_total"}},
		{`histogram_quantile(0.9, sum without (instance) (rate(x_seconds_bucket{a="by (y)", b=~'z\'w'}[5m:30s])))`, []string{"x_seconds_bucket"}},
		{`a * on(instance) group_left(version) myriarch_build_info offset 1h`, []string{"a", "myriarch_build_info"}},
		{`label_replace(x, "dst", "$1", "src", "(.*)") or vector(0) > bool Inf`, []string{"x"}},
		{`count by (version) (myriarch_build_info) # a comment: not_a_metric`, []string{"myriarch_build_info"}},
	} {
		if got := metricNames(expandGrafana(tc.expr)); !slices.Equal(got, tc.want) {
			t.Errorf("metricNames(expandGrafana(%q)) = %q, want %q", tc.expr, got, tc.want)
		}
	}
}

// exposed returns the names of the samples of a text exposition. A
// histogram's samples carry their suffixes (_bucket, _sum, _count), so a
// query of one of those finds it by that name.
func exposed(text string) map[string]bool {
	out := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			out[line[:i]] = true
		}
	}
	return out
}

// Every metric the alerts and the dashboard query is one a running myriarchd reports.
func TestMetricsExist(t *testing.T) {
	uses := map[string][]string{}
	d := loadDashboard(t)
	qs := slices.Concat(alertQueries(loadAlerts(t)), dashboardQueries(d), variableSelectors(d))
	for _, q := range qs {
		for _, n := range metricNames(expandGrafana(q.expr)) {
			uses[n] = append(uses[n], q.where+": "+strings.Join(strings.Fields(q.expr), " "))
		}
	}
	for name, file := range clusterOnly {
		if uses[name] == nil {
			continue
		}
		delete(uses, name)
		src, err := os.ReadFile(filepath.Join(metricsSource, file))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(src), strconv.Quote(name)) {
			t.Errorf("%s/%s registers no %s (a PostgreSQL-only metric the alerts or the dashboard use)", metricsSource, file, name)
		}
	}
	for name := range scrapeSeries {
		delete(uses, name)
	}

	f := startEstate(t)
	var text string
	var missing []string
	for deadline := time.Now().Add(scrapeWait); ; time.Sleep(100 * time.Millisecond) {
		f.drive(t)
		text = f.scrape(t)
		have := exposed(text)
		missing = missing[:0]
		for name := range uses {
			if !have[name] {
				missing = append(missing, name)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
	}
	slices.Sort(missing)
	for _, name := range missing {
		t.Errorf("%s is not in the /metrics of myriarchd; used by:\n  %s", name, strings.Join(uses[name], "\n  "))
	}
	if len(missing) > 0 {
		var ours []string
		for _, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(line, "myriarch") {
				ours = append(ours, line)
			}
		}
		t.Logf("myriarchd's metrics:\n%s", strings.Join(ours, "\n"))
	}
}

// blueprint configures the fleet's collectors with an exporter they do not
// have, so they report their configuration FAILED.
const blueprint = `name: gw
version: 1
owner: ops
components:
  - name: in
    class: receiver
    type: otlp
    version: 1
    config:
      protocols:
        http:
          endpoint: 127.0.0.1:4318
  - name: out
    class: exporter
    type: ` + servertest.RejectedType + `
    version: 1
pipelines:
  logs:
    - component: in
    - component: out
`

// fixture is a myriarchd whose estate gives every metric a sample: a fleet
// with a package target, two waves, an offlineAfter (fleets without one have
// no myriarch_agents_offline) and a Blueprint its collector refuses
// (configurations fail, the rollout may pause, events are raised), and two
// webhooks told of them, one that takes the notifications and one that
// refuses them.
type fixture struct {
	srv     *server.Server
	estate  string
	client  *http.Client
	refused atomic.Int32 // requests to the refusing webhook
	dropped bool         // the refusing webhook is out of the estate
}

func startEstate(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{estate: t.TempDir(), client: &http.Client{Timeout: 10 * time.Second}}
	t.Cleanup(f.client.CloseIdleConnections)
	takes := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(takes.Close)
	refuses := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.refused.Add(1)
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	}))
	t.Cleanup(refuses.Close)

	artifact := []byte("collector 0.149.1\n")
	sum := sha256.Sum256(artifact)
	const events = "[config_failed, offer_failed, rollout_paused, agent_offline]"
	files := map[string]string{
		"inventory/.keep":                          "",
		"artifacts/otelcol-contrib_0.149.1.tar.gz": string(artifact),
		"packages/otelcol-contrib/0.149.1.yaml":    "name: otelcol-contrib\nversion: 0.149.1\nartifacts:\n  - {os: linux, arch: amd64, file: artifacts/otelcol-contrib_0.149.1.tar.gz, sha256: " + hex.EncodeToString(sum[:]) + ", signature: \"untrusted comment: sig\", executable: otelcol-contrib}\n",
		"teams/ops/blueprints/gw.yaml":             blueprint,
		"fleets/edge.yaml":                         "name: edge\nselector: {site.type: edge}\npackage: otelcol-contrib\ntargetVersion: 0.149.1\nrollout: {waveLabel: ring, waves: [canary, main]}\nofflineAfter: 1h\nconfig: {blueprint: ops/gw}\n",
		"hooks.secret":                             "0123456789abcdef0123456789abcdef\n",
		"notifications/takes.yaml":                 "url: " + takes.URL + "/hook\nsecretFile: hooks.secret\nevents: " + events + "\n",
		"notifications/refuses.yaml":               "url: " + refuses.URL + "/hook\nsecretFile: hooks.secret\nevents: " + events + "\n",
	}
	for rel, content := range files {
		p := filepath.Join(f.estate, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f.srv = servertest.StartServer(t, server.Options{Estate: f.estate})
	if err := f.srv.ReloadEstate(); err != nil {
		t.Fatalf("the test's estate %s: %v", f.estate, err)
	}

	_, secret, err := f.srv.Tokens().Create(t.Context(), "edge", map[string]string{"ring": "canary"})
	if err != nil {
		t.Fatal(err)
	}
	servertest.Collector(t, f.srv.OpAMPURL(), secret, "h1", "0.149.0", "site.type", "edge")

	// A request without a token is refused: myriarch_opamp_rejects_total{reason="unauthorized"}.
	resp, err := f.client.Post(strings.Replace(f.srv.OpAMPURL(), "ws://", "http://", 1), "application/x-protobuf", nil)
	if err != nil {
		t.Fatalf("OpAMP request without a token: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("OpAMP request without a token: %s, want 401", resp.Status)
	}
	return f
}

// drive takes the refusing webhook out of the estate once it has refused a
// delivery, so that delivery is given up at its next attempt.
func (f *fixture) drive(t *testing.T) {
	t.Helper()
	if f.dropped || f.refused.Load() == 0 {
		return
	}
	if err := os.Remove(filepath.Join(f.estate, "notifications/refuses.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := f.srv.ReloadEstate(); err != nil {
		t.Fatalf("reloading the estate without the refusing webhook: %v", err)
	}
	f.dropped = true
}

// scrape returns the /metrics of the admin listener, asked without a token.
func (f *fixture) scrape(t *testing.T) string {
	t.Helper()
	url := "http://" + f.srv.AdminAddr().String() + "/metrics"
	resp, err := f.client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v\n%s", url, resp.Status, err, b)
	}
	return string(b)
}
