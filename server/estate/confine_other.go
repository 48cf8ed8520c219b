//go:build !unix

package estate

import "os"

// openFlags: systems without FIFOs in the file system need nothing more.
const openFlags = os.O_RDONLY
