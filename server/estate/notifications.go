package estate

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Notification events: what a webhook may ask to be told.
const (
	EventOfferFailed          = "offer_failed"
	EventConfigFailed         = "config_failed"
	EventConfigWarning        = "config_warning"
	EventRolloutPaused        = "rollout_paused"
	EventRolloutResumed       = "rollout_resumed"
	EventAgentOffline         = "agent_offline"
	EventPairingAmbiguous     = "pairing_ambiguous"
	EventEstateReloadFailed   = "estate_reload_failed"
	EventSelfUpdateRolledBack = "self_update_rolled_back"
)

// NotificationEvents are the event names a webhook may list, sorted.
var NotificationEvents = []string{EventAgentOffline, EventConfigFailed, EventConfigWarning, EventEstateReloadFailed,
	EventOfferFailed, EventPairingAmbiguous, EventRolloutPaused, EventRolloutResumed, EventSelfUpdateRolledBack}

// maxSecret bounds a webhook's secret file.
const maxSecret = 4096

// Webhook is one notifications/*.yaml file: where the events it lists are
// sent, signed with the secret its file holds.
type Webhook struct {
	// Name is the file's name without its extension.
	Name string `yaml:"-"`
	URL  string `yaml:"url"`
	// SecretFile names the file holding the signing secret: absolute, or
	// relative to the estate directory (which it must not leave). Secrets
	// are best kept out of the estate's repository.
	SecretFile string   `yaml:"secretFile"`
	Events     []string `yaml:"events"`
	// Fleets limits the webhook to these fleets' events (none: every
	// fleet's, and those of no fleet).
	Fleets []string `yaml:"fleets"`
	// Secret is what SecretFile held when the estate was loaded.
	Secret []byte `yaml:"-"`
	File   string `yaml:"-"`
	Line   int    `yaml:"-"`
}

// Wants reports whether the webhook is sent event for fleet ("" for none).
func (w *Webhook) Wants(event, fleet string) bool {
	if !slices.Contains(w.Events, event) {
		return false
	}
	return len(w.Fleets) == 0 || slices.Contains(w.Fleets, fleet)
}

func loadNotifications(ps *problems, e *Estate) {
	fleets := map[string]bool{}
	for _, f := range e.Fleets {
		fleets[f.Name] = true
	}
	for _, path := range yamlFiles(ps, filepath.Join(e.Dir, "notifications")) {
		wp, root, ok := decodeMapping[Webhook](ps, path, "a notifications file is a mapping (url, secretFile, events, fleets)")
		if !ok {
			continue
		}
		w := *wp
		base := filepath.Base(path)
		w.Name, w.File, w.Line = strings.TrimSuffix(base, filepath.Ext(base)), path, root.Line
		line := func(key string) int { return keyLine(root, key) }
		bad := len(ps.list)
		checkHTTPURL(ps, path, line("url"), "url", w.URL, "the secret signs the bodies instead")
		if w.SecretFile == "" {
			ps.add(path, root.Line, "secretFile is required: the file holding the secret the bodies are signed with")
		} else {
			w.Secret = readSecret(ps, e.Dir, path, line("secretFile"), w.SecretFile)
		}
		if len(w.Events) == 0 {
			ps.add(path, root.Line, "events is required (any of %s)", strings.Join(NotificationEvents, ", "))
		}
		seen := map[string]bool{}
		for _, ev := range w.Events {
			switch {
			case !slices.Contains(NotificationEvents, ev):
				ps.add(path, line("events"), "unknown event %q (known: %s)", ev, strings.Join(NotificationEvents, ", "))
			case seen[ev]:
				ps.add(path, line("events"), "events lists %q twice", ev)
			}
			seen[ev] = true
		}
		for _, f := range w.Fleets {
			if !fleets[f] {
				ps.add(path, line("fleets"), "fleet %q is not defined in fleets/", f)
			}
		}
		if len(ps.list) == bad {
			e.Webhooks = append(e.Webhooks, w)
		}
	}
	sort.Slice(e.Webhooks, func(i, j int) bool { return e.Webhooks[i].Name < e.Webhooks[j].Name })
}

// checkWebhookURL accepts an absolute http or https URL with a host and no
// user information (credentials belong in the secret, not the estate).
// readSecret reads a webhook's secret file: absolute, or relative to the
// estate directory and inside it; not empty, at most maxSecret bytes.
// Surrounding white space (a trailing newline) is not part of the secret.
func readSecret(ps *problems, dir, path string, line int, name string) []byte {
	p := name
	if !filepath.IsAbs(p) {
		if !filepath.IsLocal(p) {
			ps.add(path, line, "secretFile %q leaves the estate directory; name it by an absolute path", name)
			return nil
		}
		p = filepath.Join(dir, p)
	}
	f, err := os.Open(p)
	if err != nil {
		ps.add(path, line, "secretFile %q: %v", name, err)
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	switch {
	case err != nil:
		ps.add(path, line, "secretFile %q: %v", name, err)
		return nil
	case !st.Mode().IsRegular():
		ps.add(path, line, "secretFile %q is not a regular file", name)
		return nil
	case st.Size() > maxSecret:
		ps.add(path, line, "secretFile %q holds %d bytes; a secret is at most %d", name, st.Size(), maxSecret)
		return nil
	}
	b := make([]byte, st.Size())
	if _, err := io.ReadFull(f, b); err != nil {
		ps.add(path, line, "secretFile %q: %v", name, err)
		return nil
	}
	s := strings.TrimSpace(string(b))
	if len(s) < 16 {
		ps.add(path, line, "secretFile %q holds %s; a secret has at least 16 characters", name, plural(len(s), "character"))
		return nil
	}
	return []byte(s)
}

func plural(n int, what string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", what)
	}
	return fmt.Sprintf("%d %ss", n, what)
}
