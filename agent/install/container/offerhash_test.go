package container

import (
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
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
