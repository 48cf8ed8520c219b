package install

import (
	"errors"

	"golang.org/x/sys/windows"
)

// startBusy says whether starting a file just written failed only for a
// moment: a scanner (Windows Defender) or another reader holding the new
// executable refuses the start while it lasts; Wine refuses a start at
// such a moment with an internal error.
func startBusy(err error) bool {
	return errors.Is(err, windows.ERROR_SHARING_VIOLATION) || errors.Is(err, windows.ERROR_LOCK_VIOLATION) ||
		errors.Is(err, windows.ERROR_ACCESS_DENIED) || errors.Is(err, windows.ERROR_INTERNAL_ERROR)
}
