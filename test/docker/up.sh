#!/usr/bin/env bash
# Start a private Docker engine for the tests (container mode, docker provider).
# Installs Debian's docker.io when no engine answers. Prints the DOCKER_HOST to use.
# Idempotent: an engine already answering on the private socket is reused.
set -euo pipefail

SOCK_DIR=${MYRIARCH_DOCKER_DIR:-/tmp/myriarch-docker}
SOCK="$SOCK_DIR/docker.sock"
export DOCKER_HOST="unix://$SOCK"

if docker info >/dev/null 2>&1; then
  echo "$DOCKER_HOST"
  exit 0
fi

if ! command -v dockerd >/dev/null 2>&1; then
  echo "installing docker.io" >&2
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null
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
