#!/bin/sh
# myriarchd package, before install or upgrade: the system user and group the service
# runs as (myriarch, home /var/lib/myriarch, no login shell). Created before the files are
# unpacked, so that /etc/myriarch/tls can belong to its group. An existing user is kept
# as it is, so upgrades and reinstalls change nothing.
set -e
user=myriarch
home=/var/lib/myriarch
comment="myriarch server"

if getent passwd "$user" >/dev/null 2>&1; then
	exit 0
fi
if command -v useradd >/dev/null 2>&1; then
	# shadow-utils: RPM distributions, and Debian's passwd package.
	if ! getent group "$user" >/dev/null 2>&1; then
		groupadd --system "$user"
	fi
	useradd --system --gid "$user" --home-dir "$home" --no-create-home \
		--shell /usr/sbin/nologin --comment "$comment" "$user"
elif command -v adduser >/dev/null 2>&1; then
	# Debian's adduser.
	adduser --system --group --home "$home" --no-create-home \
		--shell /usr/sbin/nologin --gecos "$comment" "$user"
else
	echo "myriarchd: neither useradd nor adduser is installed; cannot create the user $user" >&2
	exit 1
fi
