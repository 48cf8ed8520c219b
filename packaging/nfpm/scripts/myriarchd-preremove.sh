#!/bin/sh
# myriarchd package, before removal: stop and disable the service. Upgrades (deb
# "upgrade", rpm $1 = 1) keep it running; postinstall restarts it with the new binary.
set -e
case ${1-} in
remove | purge | 0)
	if command -v systemctl >/dev/null 2>&1; then
		systemctl disable --now myriarchd.service || :
	fi
	;;
esac
