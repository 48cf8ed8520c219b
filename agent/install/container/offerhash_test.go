package container

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/pkgstatus"
)

var testOfferHash = strings.Repeat("0f", 32)

// An installed-image record written before offer_hash existed still loads
// and matches statuses that name the offer by its content hash (what older
// updaters reported); a new record matches either hash.
func TestImageInfoOfferHash(t *testing.T) {
	offer, _ := hex.DecodeString(testOfferHash)
	for _, tc := range []struct {
		name               string
		record             string
		byContent, byOffer bool
	}{
		{"old record", `{"version":"1.2.0","id":"sha256:1","ref":"c:1.2.0","hash":"` + testDigest + `"}`, true, false},
		{"new record", `{"version":"1.2.0","id":"sha256:1","ref":"c:1.2.0","hash":"` + testDigest + `","offer_hash":"` + testOfferHash + `"}`, true, true},
		{"found running", `{"version":"1.2.0","id":"sha256:1","ref":"c:1.2.0"}`, false, false},
	} {
		var info ImageInfo
		if err := json.Unmarshal([]byte(tc.record), &info); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := info.matchesOffered(digestBytes()); got != tc.byContent {
			t.Errorf("%s: matches the content hash = %v, want %v", tc.name, got, tc.byContent)
		}
		if got := info.matchesOffered(offer); got != tc.byOffer {
			t.Errorf("%s: matches the offer hash = %v, want %v", tc.name, got, tc.byOffer)
		}
		if info.matchesOffered(nil) {
			t.Errorf("%s: matches an empty hash", tc.name)
		}
	}
}

// Statuses name an offer by its PackageAvailable.hash, and a status left in
// progress by a restart is settled against the installed image by that hash
// (or by the content hash, for statuses persisted by an older updater).
func TestStatusesCarryOfferHash(t *testing.T) {
	offer, _ := hex.DecodeString(testOfferHash)
	pull := "docker://reg.test/c@sha256:" + testDigest
	newEngine := func(t *testing.T) *Engine {
		e, err := New(Options{Name: "otelcol", Package: "collector", StateDir: t.TempDir(), DockerHost: "unix:///nonexistent.sock"}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}

	t.Run("refusal", func(t *testing.T) {
		e := newEngine(t)
		var got *protobufs.PackageStatuses
		e.HandlePackages(t.Context(), &protobufs.PackagesAvailable{Packages: map[string]*protobufs.PackageAvailable{"collector": {
			Type: protobufs.PackageType_PackageType_Addon, Version: "1.3.0", Hash: offer,
			File: &protobufs.DownloadableFile{DownloadUrl: pull, ContentHash: digestBytes()},
		}}}, func(s *protobufs.PackageStatuses) error { got = s; return nil })
		if st := got.GetPackages()["collector"]; !bytes.Equal(st.GetServerOfferedHash(), offer) {
			t.Errorf("server_offered_hash %x, want the offer hash %x", st.GetServerOfferedHash(), offer)
		}
	})

	for _, tc := range []struct {
		name    string
		image   ImageInfo
		offered []byte
		want    protobufs.PackageStatusEnum
	}{
		{"by offer hash", ImageInfo{Version: "1.3.0", Hash: testDigest, OfferHash: testOfferHash}, offer, protobufs.PackageStatusEnum_PackageStatusEnum_Installed},
		{"old status, content hash", ImageInfo{Version: "1.3.0", Hash: testDigest, OfferHash: testOfferHash}, digestBytes(), protobufs.PackageStatusEnum_PackageStatusEnum_Installed},
		{"old image record", ImageInfo{Version: "1.3.0", Hash: testDigest}, digestBytes(), protobufs.PackageStatusEnum_PackageStatusEnum_Installed},
		{"another offer", ImageInfo{Version: "1.2.0", Hash: strings.Repeat("cd", 32), OfferHash: strings.Repeat("ef", 32)}, offer, protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed},
	} {
		t.Run("settle "+tc.name, func(t *testing.T) {
			e := newEngine(t)
			img := tc.image
			e.image = &img
			var sent *protobufs.PackageStatuses
			e.report = func(s *protobufs.PackageStatuses) error { sent = s; return nil }
			if err := pkgstatus.Save(e.statePath(statusesFile), &protobufs.PackageStatuses{Packages: map[string]*protobufs.PackageStatus{"collector": {
				Name: "collector", ServerOfferedVersion: "1.3.0", ServerOfferedHash: tc.offered,
				Status: protobufs.PackageStatusEnum_PackageStatusEnum_Installing,
			}}}); err != nil {
				t.Fatal(err)
			}
			if err := e.settleStatuses(); err != nil {
				t.Fatal(err)
			}
			st := sent.GetPackages()["collector"]
			if st.GetStatus() != tc.want || !bytes.Equal(st.GetServerOfferedHash(), tc.offered) {
				t.Errorf("settled %v, want %v naming %x", st, tc.want, tc.offered)
			}
		})
	}
}
