package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"aead.dev/minisign"

	"github.com/myriarch/myriarch/internal/keyring/keyringtest"
	"github.com/myriarch/myriarch/test/e2e/site"
	"github.com/myriarch/myriarch/test/peers/peerbuild"
	"github.com/myriarch/myriarch/test/peers/peerrun"
)

// The estate's signing key rotates across a fleet of real updaters, each
// under the real Supervisor, with no host touched: the hosts pin only a
// root key; the estate's signed keyring brings the first signing key,
// then one estate change (a keyring with the next key in and the first
// revoked, the next version signed with the new key, the fleet's target)
// installs it on every host; a version signed with the revoked key is
// then refused everywhere, and nothing changes on the hosts.
func TestKeyRotationAcrossAFleet(t *testing.T) {
	t.Parallel()
	e := newEnv(t) // its packages are signed with e.key
	root := keyringtest.NewKey(t)
	first := keyringtest.Sign(root, keyringtest.Doc{Serial: 1, Keys: []keyringtest.DocKey{{Key: e.pub.String()}}}.JSON(t))
	writeKeyring(t, e.estate, first.Keyring, first.Signature)
	if err := e.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	e.setTarget(peerbuild.VersionM1)

	const hosts = 3
	type host struct {
		site   *site.Site
		colUID string
	}
	var fleet []host
	for i := range hosts {
		attrs := map[string]string{"site.type": "edge", "site.id": fmt.Sprintf("k%d", i), "site.name": fmt.Sprintf("Keyring site %d", i)}
		s, err := site.New(filepath.Join(e.root, fmt.Sprintf("host%d", i)), site.Options{
			Peers: peers, Initial: peerbuild.VersionM1, ServerURL: e.srv.OpAMPURL(), Token: e.token,
			Attributes: attrs, RootKeys: []string{root.Text}, HealthWindow: 5 * time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		p, err := s.StartUpdater(bins.Updater, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { stopUpdater(t, p) })
		uid, err := s.WaitCollectorUID(60 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		fleet = append(fleet, host{site: s, colUID: uid})
	}
	waitAll := func(what string, timeout time.Duration, cond func(site.Agent) bool) {
		t.Helper()
		for _, h := range fleet {
			if _, err := e.srv.WaitAgent(h.colUID, timeout, cond); err != nil {
				t.Fatalf("collector %s: waiting for %s: %v", h.colUID, what, err)
			}
		}
	}
	waitAll("linked", 90*time.Second, func(a site.Agent) bool { return a.Pairing.State == "linked" })
	waitUpdaters := func(serial int) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for {
			list, _ := e.srv.Agents("updater")
			n := 0
			for _, a := range list {
				if a.Online && a.Attributes["dev.myriarch.keyring.serial"] == fmt.Sprint(serial) {
					n++
				}
			}
			if n == hosts {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d updaters report keyring serial %d", n, hosts, serial)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	waitUpdaters(1)

	// The rotation: one estate change, one offer.
	_, next, err := minisign.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	nextPub := next.Public().(minisign.PublicKey)
	second := keyringtest.Sign(root, keyringtest.Doc{Serial: 2, Keys: []keyringtest.DocKey{{Key: nextPub.String()}},
		Revoked: []keyringtest.DocRevoked{{KeyID: fmt.Sprintf("%016X", e.pub.ID()), Reason: "rotated out"}}}.JSON(t))
	writeKeyring(t, e.estate, second.Keyring, second.Signature)
	m2, _ := peers.Collector(peerbuild.VersionM2)
	if err := site.Publish(e.estate, m2, next); err != nil {
		t.Fatal(err)
	}
	e.setTarget(m2.Version)
	waitUpdaters(2)
	waitAll("the version signed with the new key installed", 3*time.Minute, func(a site.Agent) bool {
		return a.Identifying["service.version"] == m2.Version && a.OfferState() == "up_to_date"
	})

	// A version signed only with the revoked key is refused on every host
	// that is offered it, and every host keeps what runs.
	e.setTarget(peerbuild.VersionBroken)
	a, err := e.srv.WaitAgent(fleet[0].colUID, 2*time.Minute, func(a site.Agent) bool { return a.OfferState() == "failed" })
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(site.Str(a.Offer.Error), "signature key is revoked") {
		t.Fatalf("refused for another reason: %s", site.Str(a.Offer.Error))
	}
	for _, h := range fleet {
		a, _, _ := e.srv.GetAgent(h.colUID)
		if a.OfferState() == "failed" && !strings.Contains(site.Str(a.Offer.Error), "signature key is revoked") {
			t.Errorf("collector %s refused for another reason: %s", h.colUID, site.Str(a.Offer.Error))
		}
		if v, _ := h.site.CurrentVersion(); !strings.HasPrefix(v, m2.Version+"-") {
			t.Errorf("collector %s now runs %s", h.colUID, v)
		}
	}
}

func writeKeyring(t *testing.T, estate string, doc []byte, sig string) {
	t.Helper()
	os.MkdirAll(filepath.Join(estate, "trust"), 0o755)
	if err := os.WriteFile(filepath.Join(estate, "trust", "keyring.json"), doc, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(estate, "trust", "keyring.json.minisig"), []byte(sig), 0o644); err != nil {
		t.Fatal(err)
	}
}

// stopUpdater stops an updater (and the Supervisor it runs) and fails the
// test when it does not stop in time.
func stopUpdater(t *testing.T, p *peerrun.Process) {
	if err := p.Stop(20 * time.Second); err != nil {
		t.Errorf("stopping the updater: %v", err)
	}
}
