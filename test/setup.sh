#!/usr/bin/env bash
# Installs what `make test` needs when it is missing and starts its services.
# `make test` and .ci/run both call it; it is idempotent and quick when all is there.
#
#   bash test/setup.sh          install missing tools (Debian packages)
#   bash test/setup.sh docker   print a DOCKER_HOST that answers, starting a private engine
#
# Not root: it installs nothing and fails with the one command that would.
set -euo pipefail
cd "$(dirname "$0")/.."

# tool (or file) -> Debian package. Every test that needs one of these fails without it.
need=(
  minisign:minisign
  shellcheck:shellcheck
  systemd-analyze:systemd
  dpkg-deb:dpkg
  rpm:rpm
  useradd:passwd
  unshare:util-linux
  git:git
  curl:curl
  # myriarchd's completion scripts run in each shell they are for.
  zsh:zsh
  fish:fish
  openssl:openssl
  # Windows builds run under Wine (test/windows); Debian keeps wine64 off PATH.
  /usr/lib/wine/wine64:wine64
  x86_64-w64-mingw32-gcc:gcc-mingw-w64-x86-64
  dockerd:docker.io
  docker:docker.io
  chromium:chromium
  promtool:prometheus
  /usr/share/zoneinfo/iso3166.tab:tzdata
  /usr/share/zoneinfo/zone1970.tab:tzdata
  /etc/ssl/certs/ca-certificates.crt:ca-certificates
  # Debian keeps the server binaries off PATH, one directory per major version.
  '/usr/lib/postgresql/*/bin/initdb:postgresql'
  '/usr/lib/postgresql/*/bin/postgres:postgresql'
)

tools() {
  local missing=() entry what pkg
  for entry in "${need[@]}"; do
    what=${entry%%:*} pkg=${entry#*:}
    case $what in
      /*) compgen -G "$what" >/dev/null && continue ;;
      *) command -v "$what" >/dev/null 2>&1 && continue ;;
    esac
    case " ${missing[*]-} " in *" $pkg "*) ;; *) missing+=("$pkg") ;; esac
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" != 0 ]; then
    echo "test/setup.sh: missing packages; install them with:" >&2
    echo "  sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  echo "test/setup.sh: installing ${missing[*]}" >&2
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

case ${1:-tools} in
  tools) tools ;;
  docker) tools; exec bash test/docker/up.sh ;;
  *) echo "usage: bash test/setup.sh [tools|docker]" >&2; exit 2 ;;
esac
