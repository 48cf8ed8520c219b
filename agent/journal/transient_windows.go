package journal

import (
	"errors"

	"golang.org/x/sys/windows"
)

// transient says whether err is another process holding the file for a
// moment: a reader (`myriarch-updater status`) while the service replaces
// it, or the other way round. Windows refuses the open, or the rename over
// the file, while the other lasts.
func transient(err error, renaming bool) bool {
	return errors.Is(err, windows.ERROR_SHARING_VIOLATION) || errors.Is(err, windows.ERROR_LOCK_VIOLATION) ||
		renaming && errors.Is(err, windows.ERROR_ACCESS_DENIED)
}
