//go:build !unix

package blueprint

import "os"

// readOSFile reads dir/rel into buf through os.DirFS.
func readOSFile(dir, rel string, buf []byte) ([]byte, error) {
	return readInto(os.DirFS(dir), rel, buf)
}
