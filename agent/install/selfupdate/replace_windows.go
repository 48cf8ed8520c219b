package selfupdate

import (
	"fmt"
	"io"
	"os"

	minio "github.com/minio/selfupdate"
)

// replaceExecutable puts r's content in place of exe. A running .exe can be
// renamed but not overwritten, so github.com/minio/selfupdate writes the new
// one beside it, renames exe to backup (or a hidden name it deletes when
// backup is "") and the new one to exe; a failure between the renames is
// undone by renaming back. On error, changed reports whether exe may no
// longer be the old binary (that undoing failed too).
func replaceExecutable(r io.Reader, exe, backup string, mode os.FileMode) (changed bool, err error) {
	if backup != "" {
		os.Remove(backup)
	}
	err = minio.Apply(r, minio.Options{TargetPath: exe, TargetMode: mode, OldSavePath: backup})
	if err == nil {
		return true, nil
	}
	if rerr := minio.RollbackError(err); rerr != nil {
		return true, fmt.Errorf("selfupdate: replacing %s failed and putting the old binary back failed too (%v): %w", exe, rerr, err)
	}
	return false, fmt.Errorf("selfupdate: replace %s: %w", exe, err)
}
