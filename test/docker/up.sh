#!/usr/bin/env bash
# Start a private Docker engine for the tests (container mode, docker provider)
# and print the DOCKER_HOST to use. An engine that already answers at the
# caller's DOCKER_HOST, or on the private socket, is reused. Docker itself
# (Debian's docker.io) is installed by test/setup.sh, which calls this script.
set -euo pipefail

if [ -n "${DOCKER_HOST:-}" ] && docker info >/dev/null 2>&1; then
  echo "$DOCKER_HOST"
  exit 0
fi

SOCK_DIR=${MYRIARCH_DOCKER_DIR:-/tmp/myriarch-docker}
SOCK="$SOCK_DIR/docker.sock"
export DOCKER_HOST="unix://$SOCK"

if docker info >/dev/null 2>&1; then
  echo "$DOCKER_HOST"
  exit 0
fi

if ! command -v dockerd >/dev/null 2>&1; then
  echo "dockerd is not installed: apt-get install -y docker.io (or bash test/setup.sh)" >&2
  exit 1
fi
if [ "$(id -u)" != 0 ]; then
  echo "a private Docker engine needs root: run as root, or export DOCKER_HOST of an engine you can use" >&2
  exit 1
fi

mkdir -p "$SOCK_DIR"
# A previous engine may have been killed (sessions end, CI starts clean):
# clear what it left so the new one can start.
if [ -f "$SOCK_DIR/dockerd.pid" ]; then
  oldpid=$(cat "$SOCK_DIR/dockerd.pid" 2>/dev/null || true)
  if [ -n "$oldpid" ] && kill -0 "$oldpid" 2>/dev/null; then
    kill "$oldpid" 2>/dev/null || true
    for _ in $(seq 1 20); do kill -0 "$oldpid" 2>/dev/null || break; sleep 0.5; done
  fi
  rm -f "$SOCK_DIR/dockerd.pid"
fi
rm -f "$SOCK"
# Host networking only: no bridge, no iptables. Private data root and exec root.
nohup dockerd \
  --host "$DOCKER_HOST" \
  --data-root /var/lib/myriarch-docker \
  --exec-root "$SOCK_DIR/exec" \
  --pidfile "$SOCK_DIR/dockerd.pid" \
  --bridge=none --iptables=false --ip6tables=false \
  >"$SOCK_DIR/dockerd.log" 2>&1 &

for _ in $(seq 1 60); do
  if docker info >/dev/null 2>&1; then
    echo "$DOCKER_HOST"
    exit 0
  fi
  sleep 1
done
echo "dockerd did not come up; last log lines:" >&2
tail -20 "$SOCK_DIR/dockerd.log" >&2
exit 1
