//go:build !windows

package download

const isWindows = false
