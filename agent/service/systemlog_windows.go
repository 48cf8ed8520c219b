package service

import (
	"fmt"
	"log/slog"

	"golang.org/x/sys/windows/svc/eventlog"
)

// systemLog opens the Windows Event Log when the process runs as a Windows
// service, and returns nil otherwise (a console has stderr).
func systemLog(byManager bool) (eventSink, error) {
	isService, err := runsAsService(byManager)
	if err != nil || !isService {
		return nil, err
	}
	l, err := eventlog.Open(Name)
	if err != nil {
		return nil, fmt.Errorf("open the event log source %s: %w", Name, err)
	}
	return eventLog{l}, nil
}

// eventLog writes to the Application log. Install registers the source
// with EventCreate.exe as its message file, which shows each event's text
// as it is; the event IDs are kardianos' (1 information, 2 warning, 3 error).
type eventLog struct{ l *eventlog.Log }

func (e eventLog) Report(level slog.Level, msg string) error {
	switch {
	case level >= slog.LevelError:
		return e.l.Error(3, msg)
	case level >= slog.LevelWarn:
		return e.l.Warning(2, msg)
	}
	return e.l.Info(1, msg)
}

func (e eventLog) Close() error { return e.l.Close() }
