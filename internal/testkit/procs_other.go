//go:build !linux

package testkit

// adoptOrphans does nothing where there are no child subreapers.
func adoptOrphans() error { return nil }

// killSurvivors finds nothing where the processes are not listed in /proc.
func killSurvivors() []string { return nil }

// killDescendants finds nothing where the processes are not listed in /proc.
func killDescendants() []string { return nil }
