package e2e

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/myriarch/myriarch/agent/confirmed"
	"github.com/myriarch/myriarch/agent/statefile"
	"github.com/myriarch/myriarch/test/e2e/site"
	"github.com/myriarch/myriarch/test/peers/peerbuild"
)

// Going back: a collector upgraded from m.1 (the site installer's) to m.2
// returns to m.1 when the fleet's targetVersion is set back, without
// trust.allow_downgrade, since the host confirmed m.1 healthy before it
// replaced it. Once m.1 is no longer in the record, the same offer is
// refused with the versions the host confirmed, and m.2 keeps running.
func TestGoBackToAConfirmedVersion(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.install(peerbuild.VersionM1)
	e.waitCollector("linked on m.1", 90*time.Second, func(a site.Agent) bool {
		return a.Online && a.Pairing.State == "linked" && a.Identifying["service.version"] == peerbuild.VersionM1
	})

	record := filepath.Join(e.site.StateDir, confirmed.File)
	store := confirmed.New(record, nil)
	// The collector reports the new version before the updater's health
	// gate ends and the version is recorded.
	waitConfirmed := func(version string, since time.Time) {
		e.t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for {
			r, err := store.Load()
			if err != nil {
				t.Fatal(err)
			}
			if slices.ContainsFunc(r[site.PackageName], func(en confirmed.Entry) bool { return en.Version == version && en.Confirmed.After(since) }) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s not confirmed since %s: %+v", version, since.Format(time.RFC3339Nano), r)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	upgrade := func(what string) {
		e.t.Helper()
		start := time.Now()
		e.setTarget(peerbuild.VersionM2)
		e.waitCollector(what, 3*time.Minute, func(a site.Agent) bool {
			return a.Online && a.Identifying["service.version"] == peerbuild.VersionM2 && a.OfferState() == "up_to_date"
		})
		waitConfirmed(peerbuild.VersionM2, start)
	}
	upgrade("m.2 up to date")
	if got := store.Versions(site.PackageName); !slices.Equal(got, []string{peerbuild.VersionM1, peerbuild.VersionM2}) {
		t.Fatalf("confirmed versions %v, want m.1 (confirmed before it was replaced) and m.2 (passed the health gate)", got)
	}

	back := time.Now()
	e.setTarget(peerbuild.VersionM1)
	col := e.waitCollector("back on m.1, up to date", 3*time.Minute, func(a site.Agent) bool {
		return a.Online && a.Identifying["service.version"] == peerbuild.VersionM1 && a.OfferState() == "up_to_date"
	})
	if col.InstanceUID != e.colUID {
		t.Fatalf("instance UID changed: %s → %s", e.colUID, col.InstanceUID)
	}
	if cur, _ := e.site.CurrentVersion(); !strings.HasPrefix(cur, peerbuild.VersionM1) {
		t.Fatalf("current → %s after going back", cur)
	}
	waitConfirmed(peerbuild.VersionM1, back)

	// Forward again, then m.1 leaves the record (as when it was confirmed
	// more than 32 versions ago, or the operator removed it).
	upgrade("m.2 again, up to date")
	r, err := store.Load()
	if err != nil {
		t.Fatal(err)
	}
	r[site.PackageName] = slices.DeleteFunc(r[site.PackageName], func(en confirmed.Entry) bool { return en.Version == peerbuild.VersionM1 })
	if err := statefile.Write(record, r); err != nil {
		t.Fatal(err)
	}
	e.setTarget(peerbuild.VersionM1)
	col = e.waitCollector("going back to m.1 refused", 2*time.Minute, func(a site.Agent) bool {
		return a.OfferState() == "failed" && a.Offer.Version == peerbuild.VersionM1
	})
	want := "downgrade from " + peerbuild.VersionM2 + " to " + peerbuild.VersionM1 + " refused (trust.allow_downgrade is false): " +
		"this host may go back only to a version it confirmed healthy: " + peerbuild.VersionM2
	if col.Offer.Error == nil || !strings.Contains(*col.Offer.Error, want) {
		t.Fatalf("refusal %v, want it to say %q", site.Str(col.Offer.Error), want)
	}
	if col.Identifying["service.version"] != peerbuild.VersionM2 {
		t.Fatalf("the collector runs %s after the refusal", col.Identifying["service.version"])
	}
	if cur, _ := e.site.CurrentVersion(); !strings.HasPrefix(cur, peerbuild.VersionM2) {
		t.Fatalf("current → %s after the refusal", cur)
	}
}
