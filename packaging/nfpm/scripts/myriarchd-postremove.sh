#!/bin/sh
# myriarchd package, after removal: forget the removed unit. The configuration in
# /etc/myriarch, the state in /var/lib/myriarch and the myriarch user are kept.
set -e
systemd_run=${MYRIARCH_SYSTEMD_RUN:-/run/systemd/system}
if command -v systemctl >/dev/null 2>&1 && [ -d "$systemd_run" ]; then
	systemctl daemon-reload || :
fi
