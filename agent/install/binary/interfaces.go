package binary

import (
	"context"

	"github.com/open-telemetry/opamp-go/protobufs"
)

// Controller is the part of supervisor control the engine needs
// (agent/supervisor.Controller satisfies it).
//
// Start on a running supervisor and Stop on a stopped one are no-ops. Stop
// returns only when the supervisor and its collector are gone (the upstream
// supervisor must be stopped with SIGINT). Both are bounded by ctx.
type Controller interface {
	Stop(ctx context.Context) error
	Start(ctx context.Context) error
	// PID is the supervisor's process ID, 0 when it is not running.
	PID() int
}

// Reporter sends the complete set of package statuses to the server. It is
// called from the engine's goroutine, never concurrently, and should not
// block for long. opamp-go's client.OpAMPClient satisfies it.
type Reporter interface {
	SetPackageStatuses(*protobufs.PackageStatuses) error
}

// ReporterFunc adapts a function (e.g. the updater's StatusReporter) to Reporter.
type ReporterFunc func(*protobufs.PackageStatuses) error

// SetPackageStatuses calls f.
func (f ReporterFunc) SetPackageStatuses(s *protobufs.PackageStatuses) error { return f(s) }
