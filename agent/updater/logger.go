package updater

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/open-telemetry/opamp-go/client/types"
)

// opampLogger routes opamp-go's printf logging into slog.
type opampLogger struct{ log *slog.Logger }

var _ types.Logger = opampLogger{}

func (l opampLogger) Debugf(ctx context.Context, format string, v ...any) {
	l.log.DebugContext(ctx, fmt.Sprintf(format, v...), "component", "opamp")
}

func (l opampLogger) Errorf(ctx context.Context, format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	if strings.HasPrefix(msg, "settings.Capabilities is deprecated") {
		// Deliberate: see the Capabilities field in Updater.Run.
		l.log.DebugContext(ctx, msg, "component", "opamp")
		return
	}
	l.log.WarnContext(ctx, msg, "component", "opamp")
}
