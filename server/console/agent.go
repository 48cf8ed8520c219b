package console

import (
	"context"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/internal/linediff"
	"github.com/myriarch/myriarch/server/admin"
)

// Agent page bounds.
const (
	maxHealthNodes = 500
	maxHealthDepth = 8
	maxConfigShown = 1 << 20 // characters of a config body shown
)

type attrRow struct {
	Key, Value, Source, Note string
	Long                     bool // longer than a table cell shows
	Filter                   string
}

type healthNode struct {
	Name     string
	H        *admin.Health
	Children []healthNode
}

type linkRef struct {
	UID  string
	Link string
}

type configView struct {
	Desired        string
	DesiredHash    string
	DesiredErr     string
	Compared       string // the hash the diff is against
	ComparedLabel  string
	ComparedStatus string
	Diff           []linediff.Hunk
	DiffNote       string
	Truncated      bool
}

type agentData struct {
	A             *agentDoc
	Host, Version string
	Attrs         []attrRow
	Health        []healthNode
	HealthCut     bool
	PairingState  string
	PairingReason string
	Linked        *linkRef
	Claimants     []linkRef
	ShowClaimants bool // more than the linked updater claims the collector
	Updater       []field
	Assignment    []field
	AssignmentErr string
	// Warnings are what the assigned configuration leaves out.
	Warnings      []string
	SyncState     string
	Offer         []field
	OfferState    string
	OfferErr      string
	Progress      *progressView
	Config        *configView
	Events        []admin.Event
	CanRetryOffer bool
	CanRetryConf  bool
}

type progressView struct {
	Percent     float64
	BytesPerSec float64
}

var assignmentOrder = [][2]string{
	{"fleet", "Fleet"}, {"targetVersion", "Target version"}, {"syncState", "Sync state"}, {"blueprint", "Blueprint"},
	{"revision", "Estate revision"}, {"assigned", "Assigned hash"}, {"desired", "Desired hash"}, {"failed", "Failed hash"},
	{"context", "Render context"}, {"error", "Assignment error"},
}

var hashKeys = map[string]bool{"assigned": true, "desired": true, "failed": true, "hash": true, "revision": true,
	"collector": true, "updater": true, "collectorInstanceUid": true, "imageDigest": true}

var offerOrder = [][2]string{{"state", "State"}, {"package", "Package"}, {"version", "Version"}, {"error", "Error"}, {"updatedAt", "Updated"}}

// agent is one agent's page: what it is, what it reports, its pairing,
// assignment, offer and configuration, and its history.
func (c *Console) agent(w http.ResponseWriter, r *http.Request, s *session) {
	uid, err := uuid.Parse(r.PathValue("uid"))
	if err != nil {
		c.fail(w, r, s, http.StatusNotFound, "Not an instance UID.")
		return
	}
	var a agentDoc
	if err := c.api.get(r.Context(), "/api/v1/agents/"+uid.String(), &a); err != nil {
		c.failAPI(w, r, s, err)
		return
	}
	d := agentData{A: &a, Host: a.Attributes["host.name"], Version: a.Attributes["service.version"]}
	d.Attrs = attrRows(&a)
	budget := maxHealthNodes
	if a.Health != nil {
		d.Health = []healthNode{healthTree("agent", a.Health, 0, &budget)}
		d.HealthCut = budget <= 0
	}
	live := []string{"uid=" + uid.String()}
	d.PairingState, _ = str(a.Pairing, "state")
	d.PairingReason, _ = str(a.Pairing, "reason")
	for _, k := range []string{"updater", "collector"} {
		if u, ok := str(a.Pairing, k); ok {
			d.Linked = &linkRef{UID: u, Link: "/agents/" + url.PathEscape(u)}
			if _, err := uuid.Parse(u); err == nil {
				live = append(live, "uid="+u)
			}
		}
	}
	if cl, ok := asMap(a.Pairing)["claimants"].([]any); ok {
		for _, x := range cl {
			if u, ok := x.(string); ok {
				d.Claimants = append(d.Claimants, linkRef{UID: u, Link: "/agents/" + url.PathEscape(u)})
			}
		}
	}
	d.ShowClaimants = len(d.Claimants) > 1 || (len(d.Claimants) == 1 && (d.Linked == nil || d.Linked.UID != d.Claimants[0].UID))
	if a.Updater != nil {
		d.Updater = fields(asMap(a.Updater), [][2]string{{"installMode", "Install mode"}, {"serverEndpoint", "Server endpoint"},
			{"supervisorService", "Supervisor service"}, {"collectorInstanceUid", "Collector instance UID"},
			{"imageVersion", "Image version"}, {"imageDigest", "Image digest"}}, hashKeys)
	}
	if as := asMap(a.Assignment); as != nil {
		flat := map[string]any{}
		for k, v := range as {
			if k == "warnings" {
				for _, w := range asList(v) {
					d.Warnings = append(d.Warnings, warningText(asMap(w)))
				}
				continue
			}
			if k == "reported" {
				if rep, ok := v.(map[string]any); ok {
					for rk, rv := range rep {
						flat["reported."+rk] = rv
					}
					continue
				}
			}
			flat[k] = v
		}
		order := append(append([][2]string{}, assignmentOrder...),
			[2]string{"reported.hash", "Reported hash"}, [2]string{"reported.status", "Reported status"}, [2]string{"reported.error", "Reported error"})
		mono := map[string]bool{"reported.hash": true}
		for k := range hashKeys {
			mono[k] = true
		}
		d.Assignment = fields(flat, order, mono)
		d.AssignmentErr, _ = str(a.Assignment, "error")
		d.SyncState, _ = str(a.Assignment, "syncState")
		failedHash, _ := str(a.Assignment, "failed")
		d.CanRetryConf = (d.SyncState == "failed" || failedHash != "") && may(r.Context(), "POST /agents/{uid}/config/retry", c.opts.API.FleetOfAgent(uid))
		if may(r.Context(), "GET /api/v1/agents/{uid}/config", "") {
			d.Config = c.configOf(r.Context(), uid, as)
		} else if desired, _ := str(as, "desired"); desired != "" {
			d.Config = &configView{DesiredHash: desired, DesiredErr: "Your role cannot read configurations: they may hold credentials (the operator role can)."}
		}
	}
	if offer := asMap(a.Offer); offer != nil {
		o := map[string]any{}
		for k, v := range offer {
			if k != "progress" {
				o[k] = v
			}
		}
		if s, ok := str(o, "updatedAt"); ok {
			if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
				o["updatedAt"] = t.UTC().Format(time.RFC3339)
			}
		}
		d.Offer = fields(o, offerOrder, nil)
		d.OfferState, _ = str(a.Offer, "state")
		d.OfferErr, _ = str(a.Offer, "error")
		d.CanRetryOffer = d.OfferState == "failed" && may(r.Context(), "POST /agents/{uid}/retry", c.opts.API.FleetOfAgent(uid))
		if p := obj(a.Offer, "progress"); p != nil {
			pv := &progressView{}
			pv.Percent, _ = p["percent"].(float64)
			pv.BytesPerSec, _ = p["bytesPerSecond"].(float64)
			pv.Percent = min(max(pv.Percent, 0), 100)
			d.Progress = pv
		}
	}
	for i := len(a.Events) - 1; i >= 0; i-- {
		d.Events = append(d.Events, a.Events[i])
	}
	title := d.Host
	if title == "" {
		title = uid.String()
	}
	c.render(w, r, http.StatusOK, "agent", view{Title: title, Nav: "agents", CSRF: s.csrf,
		Events: "/events?" + strings.Join(live, "&"), Flash: c.flash(r, s), Data: d})
}

// attrRows lists the attribute view with where each key comes from.
func attrRows(a *agentDoc) []attrRow {
	keys := make([]string, 0, len(a.Attributes))
	for k := range a.Attributes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]attrRow, 0, len(keys))
	for _, k := range keys {
		v := a.Attributes[k]
		row := attrRow{Key: k, Value: v, Long: len([]rune(v)) > shortText, Filter: agentsLink("attr", k+"="+v)}
		switch label, isLabel := strings.CutPrefix(k, "labels."); {
		case isLabel:
			row.Source = "label"
			if src := a.LabelSources[label]; src != "" {
				row.Source += ": " + src
			}
		case hasKey(a.Identifying, k):
			row.Source = "identifying"
			if nv, ok := a.NonIdentifying[k]; ok && nv != v {
				row.Note = "non-identifying value " + nv + " overridden"
			}
		default:
			row.Source = "non-identifying"
		}
		out = append(out, row)
	}
	return out
}

func hasKey(m map[string]string, k string) bool { _, ok := m[k]; return ok }

// healthTree builds the component health tree within the node budget.
func healthTree(name string, h *admin.Health, depth int, budget *int) healthNode {
	*budget--
	n := healthNode{Name: name, H: h}
	if depth >= maxHealthDepth {
		return n
	}
	names := make([]string, 0, len(h.Components))
	for k := range h.Components {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if *budget <= 0 {
			break
		}
		if ch := h.Components[k]; ch != nil {
			n.Children = append(n.Children, healthTree(k, ch, depth+1, budget))
		}
	}
	return n
}

// configOf reads the desired configuration and, when the agent last
// reported another hash of its own, the diff from that one to the desired.
func (c *Console) configOf(ctx context.Context, uid uuid.UUID, as map[string]any) *configView {
	desired, ok := str(as, "desired")
	if !ok || desired == "" {
		return nil
	}
	cv := &configView{DesiredHash: desired}
	body, err := c.api.call(ctx, http.MethodGet, "/api/v1/agents/"+uid.String()+"/config", nil)
	if err != nil {
		cv.DesiredErr = err.Error()
		return cv
	}
	cv.Desired = string(body)
	if len([]rune(cv.Desired)) > maxConfigShown {
		cv.Truncated = true
	}
	rep := obj(as, "reported")
	other, _ := str(rep, "hash")
	status, _ := str(rep, "status")
	if other == "" || other == desired {
		return cv
	}
	cv.Compared = other
	cv.ComparedLabel = "last reported (" + status + ")"
	cv.ComparedStatus = status
	// The API answers only a configuration of this agent's own: a hash
	// the agent reports is compared with only when this server gave it
	// that configuration, never when it is another agent's.
	old, err := c.api.call(ctx, http.MethodGet, "/api/v1/agents/"+uid.String()+"/config?hash="+url.QueryEscape(other), nil)
	switch {
	case notFound(err):
		cv.DiffNote = "No diff: the last reported configuration is not one this server gave this agent, or is no longer stored."
		return cv
	case err != nil:
		cv.DiffNote = "The last reported configuration could not be read: " + err.Error()
		return cv
	}
	h, ok := linediff.Lines(string(old), cv.Desired)
	switch {
	case !ok:
		cv.DiffNote = "The two configurations differ too much to show a diff here."
	case len(h) == 0:
		cv.DiffNote = "The two configurations have the same text."
	}
	cv.Diff = h
	return cv
}

// warningText says what one of the assignment's warnings left out.
func warningText(w map[string]any) string {
	comp, _ := str(w, "component")
	src, _ := str(w, "source")
	v, _ := str(w, "variable")
	why, _ := str(w, "reason")
	out := "receiver " + comp
	if src != "" && src != comp {
		out += " (" + src + ")"
	}
	if v != "" {
		return out + " is left out: " + v + " is not in the collector's context"
	}
	return out + " is left out: " + why
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}
