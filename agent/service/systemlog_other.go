//go:build !windows

package service

// systemLog returns nil: outside Windows services stderr is the log
// (systemd's journal captures it).
func systemLog(bool) (eventSink, error) { return nil, nil }
