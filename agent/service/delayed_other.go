//go:build !windows

package service

// delayStart: only a Windows service manager starts delayed.
func delayStart() (string, error) { return "", nil }
