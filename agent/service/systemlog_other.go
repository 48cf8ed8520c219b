//go:build !windows

package service

// systemLog returns nil: outside Windows services stderr is the log
// (systemd's journal captures it).
func systemLog() (eventSink, error) { return nil, nil }
