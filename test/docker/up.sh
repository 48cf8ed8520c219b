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
