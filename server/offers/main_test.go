package offers

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine they started is still
// running at the end, or when a test wrote the detail and offer that
// records share.
func TestMain(m *testing.M) { goleak.VerifyTestMain(sharedUnwritten{m}) }

type sharedUnwritten struct{ m *testing.M }

func (s sharedUnwritten) Run() int {
	code := s.m.Run()
	if !noOffer.zero() || noOffer.offerSpec != noSpec || !specZero(noSpec) {
		fmt.Fprintf(os.Stderr, "the detail records share was written: %+v, offer %+v\n", *noOffer, *noSpec)
		return 1
	}
	return code
}

func specZero(s *offerSpec) bool {
	return *s == offerSpec{}
}
