// Package buildinfo holds the version stamped into every myriarch binary at
// link time, so all commands report the same version string.
package buildinfo

// Version is set with -ldflags "-X github.com/myriarch/myriarch/internal/buildinfo.Version=…".
var Version = "0.1.0-dev"
