package admission

import (
	"cmp"
	"slices"
	"strings"

	"github.com/hashicorp/go-version"
)

// confirmed reports whether v is one of the confirmed versions (the same
// semantic version, build metadata aside).
func confirmed(v *version.Version, list []string) bool {
	for _, c := range list {
		if cv, err := version.NewVersion(c); err == nil && cv.Equal(v) && cv.Prerelease() == v.Prerelease() {
			return true
		}
	}
	return false
}

// confirmedText says which versions the host confirmed, in version order,
// for a refused downgrade.
func confirmedText(list []string) string {
	if len(list) == 0 {
		return "this host has confirmed no version healthy yet; it may go back only to a version it confirmed"
	}
	sorted := slices.Clone(list)
	slices.SortFunc(sorted, func(a, b string) int {
		va, errA := version.NewVersion(a)
		vb, errB := version.NewVersion(b)
		switch {
		case errA == nil && errB == nil:
			return cmp.Or(va.Compare(vb), strings.Compare(a, b))
		case errA == nil:
			return -1
		case errB == nil:
			return 1
		}
		return strings.Compare(a, b)
	})
	return "this host may go back only to a version it confirmed healthy: " + strings.Join(slices.Compact(sorted), ", ")
}
