#!/bin/sh
# myriarch-updater package, after removal: forget the removed unit. Configuration in
# /etc/myriarch and state in /var/lib/myriarch-updater are kept.
set -e
systemd_run=${MYRIARCH_SYSTEMD_RUN:-/run/systemd/system}
if command -v systemctl >/dev/null 2>&1 && [ -d "$systemd_run" ]; then
	systemctl daemon-reload || :
fi
