//go:build linux

package binary

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/myriarch/myriarch/agent/install"
	"github.com/open-telemetry/opamp-go/protobufs"
)

// State written by an updater that predates offer_hash (installed record,
// journal) still loads, and the statuses built from it name the offer by
// the content hash, which myriarchd accepts together with the version.
func TestOldRecordsWithoutOfferHash(t *testing.T) {
	t.Run("installed record", func(t *testing.T) {
		e := newEnv(t)
		eng, rec := e.engine(nil)
		art := collectorBinary("0.149.0", "ok")
		o := e.signedOffer("0.149.0", "/v", art)
		offer(eng, rec, o)
		st := rec.Wait(t, pkg, 30*time.Second, func(s *protobufs.PackageStatus) bool { return terminal(s) && s.ServerOfferedVersion == "0.149.0" })
		if st.Status != stInstalled || !bytes.Equal(st.ServerOfferedHash, o.Packages[pkg].Hash) {
			t.Fatalf("status %v, want Installed with the offer hash %x", st, o.Packages[pkg].Hash)
		}
		eng.Close()
		// Check the new record, then rewrite it as the old updater did.
		var in map[string]any
		b, err := os.ReadFile(filepath.Join(e.state, InstalledFile))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &in); err != nil {
			t.Fatal(err)
		}
		if in["offer_hash"] != hex.EncodeToString(o.Packages[pkg].Hash) {
			t.Fatalf("installed record %s has no offer_hash %x", b, o.Packages[pkg].Hash)
		}
		sum := sha256.Sum256(art)
		old := fmt.Sprintf(`{"version":"0.149.0","hash":%q,"dir":%q}`, hex.EncodeToString(sum[:]), dirFor("0.149.0", art))
		if err := os.WriteFile(filepath.Join(e.state, InstalledFile), []byte(old), 0o600); err != nil {
			t.Fatal(err)
		}
		// No persisted status either: Recover rebuilds it from the record.
		os.Remove(filepath.Join(e.state, install.StatusesFile))

		eng2, _ := e.engine(nil)
		st = lastStatus(t, eng2)
		if st.Status != stInstalled || st.AgentHasVersion != "0.149.0" ||
			!bytes.Equal(st.ServerOfferedHash, sum[:]) || !bytes.Equal(st.AgentHasHash, sum[:]) {
			t.Fatalf("status %v, want Installed 0.149.0 with the content hash %x", st, sum)
		}
	})

	t.Run("journal", func(t *testing.T) {
		e := newEnv(t)
		art := collectorBinary("0.149.0", "ok")
		s := sha256.Sum256(art)
		sum := hex.EncodeToString(s[:])
		// An install interrupted after admission, journaled by an old updater.
		old := fmt.Sprintf(`{"id":"old1","kind":"collector","package":%q,"version":"0.149.0","hash":%q,"step":"admitted",`+
			`"prev_dir":%q,"new_dir":%q,"prev_version":"0.148.0","started":"2026-01-01T00:00:00Z","updated":"2026-01-01T00:00:00Z"}`,
			pkg, sum, e.initialDir, dirFor("0.149.0", art))
		if err := os.WriteFile(filepath.Join(e.state, "install-journal.json"), []byte(old), 0o600); err != nil {
			t.Fatal(err)
		}
		eng, _ := e.engine(nil) // Recover replays the journal
		st := lastStatus(t, eng)
		if st.Status != stFailed || st.ServerOfferedVersion != "0.149.0" || hex.EncodeToString(st.ServerOfferedHash) != sum {
			t.Fatalf("status %v, want InstallFailed for 0.149.0 with the content hash %s", st, sum)
		}
		if _, err := os.Stat(filepath.Join(e.state, "install-journal.json")); !os.IsNotExist(err) {
			t.Fatalf("journal still present after recovery: %v", err)
		}
		e.waitCollector(e.initialDir)
	})
}
