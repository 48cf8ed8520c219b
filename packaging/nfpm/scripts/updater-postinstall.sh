#!/bin/sh
# myriarch-updater package, after install or upgrade: enable the service, and start it only
# when it is configured. Without /etc/myriarch/updater.yaml the unit's ConditionPathExists
# keeps it from starting at boot too; the site installer (installer/install.sh) writes it.
set -e
config=${MYRIARCH_UPDATER_CONFIG:-/etc/myriarch/updater.yaml}
systemd_run=${MYRIARCH_SYSTEMD_RUN:-/run/systemd/system}

if ! command -v systemctl >/dev/null 2>&1; then
	exit 0
fi
if [ -d "$systemd_run" ]; then
	systemctl daemon-reload || :
fi
systemctl enable myriarch-updater.service || :
if [ -d "$systemd_run" ] && [ -f "$config" ]; then
	# Configured already (an upgrade, or configuration management came first): run this version.
	systemctl restart myriarch-updater.service || :
else
	echo "myriarch-updater: service enabled; it starts once $config exists"
fi
