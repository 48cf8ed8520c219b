package offers

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/myriarch/myriarch/server/admin"
)

// The listing renders decorations through WriteFields; they must come out
// as encoding/json would render the same values.
func TestDecorationsRenderAsEncodingJSON(t *testing.T) {
	s := func(v string) *string { return &v }
	at := time.Date(2026, 3, 4, 5, 6, 7, 89, time.UTC)
	for _, v := range []admin.FieldWriter{
		CollectorPairing{State: "no_updater", Claimants: []string{}},
		CollectorPairing{State: "linked", Updater: s("u-1"), Claimants: []string{"u-1"}},
		CollectorPairing{State: "ambiguous", Claimants: []string{"u-1", "u-2"}},
		CollectorPairing{State: "weird", Claimants: nil},
		UpdaterPairing{State: "unlinked", Reason: "host name"},
		UpdaterPairing{State: "linked", Collector: s("c-1")},
		Assignment{},
		Assignment{Fleet: s("edge"), TargetVersion: s("0.149.1"), Error: s(`fleets [a b] match with the same priority 1 <&>`)},
		Offer{Package: "otelcol-contrib", Version: "0.149.1", State: "offered", UpdatedAt: at},
		Offer{Package: "p", Version: "1", State: "failed", Error: s("exit 1\n\"boom\" → ✗"), UpdatedAt: at},
		Offer{Package: "p", Version: "1", State: "downloading", UpdatedAt: at, Progress: &Progress{Percent: 33.333333333333336, BytesPerSec: 1.5e21}},
		Offer{Package: "p", Version: "1", State: "downloading", Progress: &Progress{Percent: 1e-7}},
	} {
		for _, depth := range []int{0, 3} {
			want, err := json.MarshalIndent(v, spaces(2*depth), "  ")
			if err != nil {
				t.Fatal(err)
			}
			if got := admin.AppendIndented(nil, v, depth); string(got) != string(want) {
				t.Errorf("%#v at depth %d:\ngot  %s\nwant %s", v, depth, got, want)
			}
		}
	}
}

func spaces(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = ' '
	}
	return string(b)
}
