package main

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// printStatus writes r as aligned "label  value" lines; a value of several
// lines continues under the first.
func printStatus(w io.Writer, r *statusReport) error {
	var b strings.Builder
	line := func(label, format string, args ...any) {
		for i, l := range strings.Split(fmt.Sprintf(format, args...), "\n") {
			if i > 0 {
				label = ""
			}
			fmt.Fprintf(&b, "%-13s%s\n", label, l)
		}
	}

	svc := r.Service.State
	if r.Service.Platform != "" {
		svc += " (" + r.Service.Platform + ")"
	}
	line("service", "%s", svc)
	line("config", "%s", r.Config)
	line("mode", "%s", r.Mode)
	line("state dir", "%s", r.StateDir)
	line("server", "%s", orUnset(r.Server.Endpoint))
	line("connection", "%s", connectionText(r.Server, r.Service.State))

	u := r.Updater.Version + " (this binary)"
	if r.Updater.InstanceUID != "" {
		u += ", instance UID " + r.Updater.InstanceUID
	}
	line("updater", "%s", u)
	if p := r.Updater.SelfUpdate; p != nil {
		line("self-update", "%s -> %s applied %s, waiting for the new binary to confirm it", p.From, p.To, stamp(p.Applied))
	}
	if k := r.Updater.Keyring; k != nil {
		switch {
		case k.Problem != "":
			line("keyring", "not in force: %s", k.Problem)
		case k.Serial == 0:
			line("keyring", "none received yet (trust.root_keys is set)")
		default:
			line("keyring", "serial %d", k.Serial)
		}
	}
	line("collector", "%s", collectorText(r.Collector))
	line("supervisor", "%s", supervisorText(r.Supervisor))

	if p := r.Install.InProgress; p != nil {
		version := p.Version
		if p.PrevVersion != "" {
			version = p.PrevVersion + " -> " + p.Version
		}
		t := fmt.Sprintf("%s %s: in progress, step %q at %s (started %s)", p.Package, version, p.Step, stamp(p.Updated), stamp(p.Started))
		if p.Reason != "" {
			t += "\nrolling back: " + p.Reason
		}
		line("offer", "%s", t)
	} else {
		line("offer", "none in progress")
	}
	if len(r.Install.LastResults) == 0 {
		line("last result", "none recorded")
	}
	for i, res := range r.Install.LastResults {
		label := ""
		if i == 0 {
			label = "last result"
		}
		line(label, "%s", resultText(res))
	}
	for i, n := range r.Notes {
		label := ""
		if i == 0 {
			label = "note"
		}
		line(label, "%s", n)
	}
	for i, p := range r.Problems {
		label := ""
		if i == 0 {
			label = "problem"
		}
		line(label, "%s", p)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func connectionText(s serverReport, serviceState string) string {
	c := s.Connection
	switch {
	case s.unreadable:
		return "unknown (its record cannot be read: see the problems)"
	case c == nil:
		return "unknown (nothing recorded: the updater has not run with this state dir yet)"
	}
	last := "never connected"
	if c.LastConnected != nil {
		last = "last connected " + stamp(*c.LastConnected)
	}
	var t string
	switch {
	case c.Connected:
		t = "connected since " + stamp(c.Since)
		if serviceState != "running" && serviceState != "unavailable" {
			t += " (as last recorded; the service is " + serviceState + ")"
		}
	case c.Stopped:
		t = "not connected: the updater stopped at " + stamp(c.Since) + "; " + last
	case c.LastError != "":
		t = "not connected since " + stamp(c.Since) + "; " + last + "\nlast error: " + c.LastError
	default:
		t = "connecting since " + stamp(c.Since) + "; " + last
	}
	return t
}

func collectorText(c collectorReport) string {
	var parts []string
	switch {
	case c.Version == "":
		parts = append(parts, "version unknown (nothing installed or found by the updater yet)")
	case c.FoundRunning:
		parts = append(parts, c.Version+" (found running, not installed by the updater)")
	default:
		parts = append(parts, c.Version)
	}
	if c.Image != "" {
		img := "image " + c.Image
		if c.ImageDigest != "" {
			img += "@" + c.ImageDigest
		}
		parts = append(parts, img)
	}
	if c.InstanceUID != "" {
		parts = append(parts, "instance UID "+c.InstanceUID)
	} else {
		parts = append(parts, "instance UID unknown")
	}
	return strings.Join(parts, ", ")
}

func supervisorText(s supervisorReport) string {
	switch {
	case !s.StateFound:
		return "no state yet (" + s.StateFile + ")"
	case s.RemoteConfigStatus == "":
		return "no remote config applied yet"
	}
	t := "remote config " + s.RemoteConfigStatus
	if s.RemoteConfigHash != "" {
		t += ", hash " + short(s.RemoteConfigHash)
	}
	if s.RemoteConfigError != "" {
		t += ": " + s.RemoteConfigError
	}
	return t
}

func resultText(r resultReport) string {
	t := r.Package + ": " + r.Status
	switch {
	case r.OfferedVersion != "" && r.OfferedVersion == r.HasVersion:
		t += " " + r.OfferedVersion
	case r.OfferedVersion != "":
		t += " (offered " + r.OfferedVersion
		if r.HasVersion != "" {
			t += ", has " + r.HasVersion
		}
		t += ")"
	}
	if r.Error != "" {
		t += ": " + r.Error
	}
	return t
}

func orUnset(s string) string {
	if s == "" {
		return "not configured"
	}
	return s
}

// stamp prints a time in UTC to the second, as every status line does.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12] + "…"
	}
	return hash
}
