#!/bin/sh
# myriarchd package, after install or upgrade: enable the service; start it only when it
# can serve. The default /etc/myriarch/myriarchd.yaml serves OpAMP with TLS on every
# interface, so a fresh install starts once the TLS key is in place. An upgrade restarts a
# running service with the new binary, however it is configured.
set -e
key=${MYRIARCHD_TLS_KEY_FILE:-/etc/myriarch/tls/tls.key}
systemd_run=${MYRIARCH_SYSTEMD_RUN:-/run/systemd/system}
unit=myriarchd.service

how_to_start() {
	printf '%s\n' \
		"myriarchd: service enabled, not started: $key is missing." \
		"  Put the OpAMP listener's certificate and key in place, the key readable by the service:" \
		"    install -m 0644 server.crt /etc/myriarch/tls/tls.crt" \
		"    install -m 0640 -g myriarch server.key $key" \
		"  set public_url in /etc/myriarch/myriarchd.yaml, then: systemctl start $unit" \
		"  (Without TLS: a loopback listen, or insecure_listen: true behind a TLS proxy.)"
}

if ! command -v systemctl >/dev/null 2>&1; then
	exit 0
fi
if [ -d "$systemd_run" ]; then
	systemctl daemon-reload || :
fi
systemctl enable "$unit" || :
if [ -d "$systemd_run" ] && systemctl is-active --quiet "$unit"; then
	systemctl restart "$unit" || :
elif [ -d "$systemd_run" ] && [ -f "$key" ]; then
	systemctl start "$unit" || :
elif [ ! -f "$key" ]; then
	how_to_start
fi
