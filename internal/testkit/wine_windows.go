//go:build winetest

package testkit

import _ "unsafe" // go:linkname

// Wine 8 answers NtSetInformationFile(FileDispositionInformationEx) with
// STATUS_NOT_IMPLEMENTED, which Go's deletion does not fall back from, so
// every os.RemoveAll fails under Wine ("Invalid function"). Test binaries
// built for the Wine tier (-tags winetest -ldflags=-checklinkname=0) take
// the path Go itself takes on Windows versions and file systems without
// POSIX deletion semantics.
//
//go:linkname deleteatFallback internal/syscall/windows.TestDeleteatFallback
var deleteatFallback bool

func init() { deleteatFallback = true }
