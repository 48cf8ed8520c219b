//go:build linux

package attack

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/internal/keyring"
	"github.com/myriarch/myriarch/internal/keyring/keyringtest"
	"github.com/myriarch/myriarch/internal/testkit"
)

// keyringHello is an updater that reports keyring attributes (attrs: key,
// value, …) with its description.
func keyringHello(uid uuid.UUID, attrs ...string) *protobufs.AgentToServer {
	m := updaterHello(uid, uuid.Nil, "keyring-"+uid.String()[:8])
	for i := 0; i < len(attrs); i += 2 {
		m.AgentDescription.NonIdentifyingAttributes = append(m.AgentDescription.NonIdentifyingAttributes, testkit.KV(attrs[i], attrs[i+1]))
	}
	return m
}

// The keyring's surface: updaters that lie about their keyring. A keyring
// as large as one may be goes to an updater behind at most once a
// ResendAfter however fast it asks; serials that are not numbers make an
// agent no taker; a refusal of any length is kept bounded; 1 000 updaters
// behind cost the server no copy of the keyring each.
func TestKeyringClaims(t *testing.T) {
	t.Parallel()
	root := keyringtest.NewKey(t)
	doc := keyringtest.Doc{Serial: 9}
	for range keyring.MaxKeys {
		doc.Keys = append(doc.Keys, keyringtest.DocKey{Key: keyringtest.NewKey(t).Text, NotAfter: "2030-01-01T00:00:00Z"})
	}
	for i := range 600 {
		doc.Revoked = append(doc.Revoked, keyringtest.DocRevoked{KeyID: fmt.Sprintf("%016X", i+1), Reason: "rotated out"})
	}
	signed := keyringtest.Sign(root, doc.JSON(t))
	if len(signed.Keyring) < 40<<10 {
		t.Fatalf("the keyring is only %d bytes", len(signed.Keyring))
	}
	d := startDaemonWithEstate(t, map[string]string{"trust/keyring.json": string(signed.Keyring), "trust/keyring.json.minisig": signed.Signature})
	_, secret := d.token("keyring")
	sent := func(resp *protobufs.ServerToAgent) bool {
		return resp.GetCustomMessage().GetCapability() == keyring.Capability
	}

	// A flood of polls from one updater behind: one keyring.
	flooder := uuid.New()
	n := 0
	for i := range 200 {
		m := keyringHello(flooder, keyring.AttrSerial, "1")
		m.SequenceNum = uint64(i)
		if code, resp := pollHTTP(t, d, secret, m); code != 200 {
			t.Fatalf("poll %d: %d", i, code)
		} else if sent(resp) {
			n++
		}
	}
	figure(t, "200 polls from one updater behind on a %d-byte keyring: sent %d time(s)", len(signed.Keyring), n)
	if n != 1 {
		t.Errorf("the keyring was sent %d times to one updater in 200 polls, want once per 30 s", n)
	}

	// Serials that are not numbers: no keyring, not counted.
	for _, serial := range []string{"-1", "abc", "99999999999999999999999", "", strings.Repeat("9", 4000)} {
		uid := uuid.New()
		if code, resp := pollHTTP(t, d, secret, keyringHello(uid, keyring.AttrSerial, serial)); code != 200 || sent(resp) {
			t.Errorf("serial %.20q: %d, keyring sent %v", serial, code, sent(resp))
		}
	}

	// A refusal of 200 KiB, naming the estate's keyring: kept bounded.
	refuser := uuid.New()
	why := keyring.ID(signed.Keyring) + ": " + strings.Repeat("r", 200<<10)
	pollHTTP(t, d, secret, keyringHello(refuser, keyring.AttrSerial, "0", keyring.AttrRefused, why))
	_, body := d.agentJSON(refuser.String())
	figure(t, "an updater's 200 KiB keyring refusal: agent JSON %d bytes", len(body))
	if len(body) > 64<<10 {
		t.Errorf("the refusal reaches the agents API with %d bytes", len(body))
	}

	// 1 000 updaters behind.
	heap0 := d.heapAfterGC()
	_, secret2 := d.token("keyring-2")
	got := 0
	for i := range 1000 {
		tok := secret
		if i >= 500 {
			tok = secret2 // 1 000 new agents a minute per token at most
		}
		if code, resp := pollHTTP(t, d, tok, keyringHello(uuid.New(), keyring.AttrSerial, "0")); code != 200 {
			t.Fatalf("updater %d: %d", i, code)
		} else if sent(resp) {
			got++
		}
	}
	per := (d.heapAfterGC() - heap0) / 1000
	behind := d.metric("myriarch_keyring_updaters", `state="offered"`)
	figure(t, "1 000 updaters behind on a %d-byte keyring: %d sent it, live heap %+.1f KiB per updater, %v counted offered, RSS %s",
		len(signed.Keyring), got, float64(per)/1024, behind, mib(d.rss()))
	if got != 1000 || behind < 1000 {
		t.Errorf("%d of 1 000 updaters sent the keyring, %v counted offered", got, behind)
	}
	if per > 16<<10 {
		t.Errorf("an updater behind costs %d bytes of heap: the keyring is copied per updater", per)
	}
}
