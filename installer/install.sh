#!/bin/sh
# myriarch site installer for Linux: puts a managed OpenTelemetry Collector on this host.
#
# It installs the collector (versioned layout, `current` switched atomically), the upstream
# OpAMP Supervisor and myriarch-updater with its Sigstore verifier beside it, writes their
# configurations with the site attribute contract (site.*, deployment.environment.name) and
# registers systemd services.
#
# Everything is validated before anything is written; every artifact is checked against its
# SHA-256 file and its minisign signature before the first file is touched. Re-running with
# the same flags changes nothing; with changed flags only what differs is rewritten and only
# the services whose files changed are restarted.
#
# Artifacts (from --artifacts DIR or an http(s) URL), for OS linux and ARCH amd64|arm64:
#   otelcol_<version>_linux_<ARCH>.tar.gz   archive with the executable otelcol-contrib at its top
#   opampsupervisor_linux_<ARCH>            the upstream OpAMP Supervisor executable
#   myriarch-updater_linux_<ARCH>           the myriarch-updater executable
#   myriarch-sigstore_linux_<ARCH>          the Sigstore verifier the updater runs (beside it)
# each next to <name>.sha256 (hex digest, optionally followed by the file name) and
# <name>.minisig (minisign signature made with the key given by --minisign-key).
#
# Needs: sh, tar, gzip, sha256sum, minisign (Debian/Ubuntu: apt-get install minisign),
# curl or wget for URL artifacts, systemctl unless --no-start.
#
# Run with --help for the flags. The token is never printed; files that hold it are 0600.
set -eu

PROG=install.sh
SUPERVISOR_UNIT=otelcol-supervisor
UPDATER_UNIT=myriarch-updater
COLLECTOR_EXE=otelcol-contrib
COLLECTOR_PACKAGE=otelcol-contrib
CONTAINER_NAME=otelcol
MAX_VALUE_LEN=256

# ISO 3166-1 alpha-2 codes (the set in tzdata's iso3166.tab).
ISO3166=" AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ
BR BS BT BV BW BY BZ CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM
DO DZ EC EE EG EH ER ES ET FI FJ FK FM FO FR GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS
GT GU GW GY HK HM HN HR HT HU ID IE IL IM IN IO IQ IR IS IT JE JM JO JP KE KG KH KI KM KN
KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO MP MQ
MR MS MT MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM
PN PR PS PT PW PY QA RE RO RS RU RW SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV
SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR TT TV TW TZ UA UG UM US UY UZ VA VC VE VG VI
VN VU WF WS YE YT ZA ZM ZW "

usage() {
	cat <<'EOF'
Usage: install.sh --server URL (--token TOKEN | --token-file FILE)
                  --site-id ID --site-type TYPE [--site-name NAME] --site-country CC
                  [--site-region REGION] --site-timezone TZ --environment ENV
                  [--mode binary|container] --collector-version V
                  --artifacts DIR|URL --minisign-key KEY|FILE [--root-key KEY|FILE]
                  [--catalog-mirrors HOST[,HOST...]] [--root DIR] [--no-start] [--dry-run]
       install.sh --uninstall [--purge] [--root DIR] [--no-start] [--dry-run]

  --server URL            OpAMP endpoint (ws, wss, http or https); /v1/opamp is added
                          when the URL has no path
  --token TOKEN           enrollment token (prefer --token-file: arguments are visible in ps)
  --token-file FILE       file holding the enrollment token
  --site-id ID            site.id, always a string (leading zeros are kept)
  --site-type TYPE        site.type, lower case (edge, office, datacenter, cloud, ...)
  --site-name NAME        site.name, human readable
  --site-country CC       site.country, ISO 3166-1 alpha-2, upper case (DE)
  --site-region REGION    site.region
  --site-timezone TZ      site.timezone, an IANA zone (Europe/Amsterdam)
  --environment ENV       deployment.environment.name (production)
  --mode MODE             binary (default) or container
  --collector-version V   collector version to install (binary mode)
  --artifacts DIR|URL     where the signed artifacts are
  --minisign-key KEY      minisign public key (RW...) or a file holding it
  --root-key KEY          root key of the estate's signed keyring (RW... or a file holding
                          it): the keyring it signs brings the signing keys and revocations
  --catalog-mirrors HOSTS hosts besides the server's that package downloads may come from
                          (the catalog's url: entries and their redirects), comma-separated:
                          host, host:port or *.example.com; the updater refuses any other
  --root DIR              install under DIR (tests, non-root installs); needs --no-start
  --no-start              do not register or start services
  --dry-run               print the plan, change nothing
  --uninstall             remove services and binaries, keep configuration and data
  --purge                 with --uninstall: remove configuration and data too
  --help                  this text
EOF
}

ERRORS=
NERRORS=0
err() {
	ERRORS="${ERRORS}  - $*
"
	NERRORS=$((NERRORS + 1))
}

say() { printf '%s\n' "$*"; }

die() {
	printf '%s: %s\n' "$PROG" "$*" >&2
	exit 1
}

# ---------------------------------------------------------------- flags

SERVER='' TOKEN='' TOKEN_SET=0 TOKEN_FILE='' SITE_ID='' SITE_ID_SET=0 SITE_TYPE='' SITE_NAME='' SITE_COUNTRY=''
SITE_REGION='' SITE_TIMEZONE='' ENVIRONMENT='' MODE=binary COLLECTOR_VERSION='' ARTIFACTS='' MINISIGN_KEY='' MIRRORS=''
ROOT_KEY='' ROOT_KEY_SET=0 ROOT='' ROOT_SET=0 NO_START=0 DRY_RUN=0 UNINSTALL=0 PURGE=0 HELP=0

# value and switch are used by the flag table below: value takes the flag's value from
# --flag=value or from the next argument, switch refuses a value.
value() {
	if [ "$hasval" = 1 ]; then
		return 0
	fi
	if [ "$nargs" -gt 0 ]; then
		case $next in
		--*) ;;
		*)
			val=$next
			used_next=1
			return 0
			;;
		esac
	fi
	err "$name: missing value"
	return 1
}

switch() {
	if [ "$hasval" = 1 ]; then
		err "$name: takes no value"
		return 1
	fi
	return 0
}

parse_flags() {
	while [ $# -gt 0 ]; do
		arg=$1
		shift
		nargs=$#
		next=${1-}
		used_next=0
		case $arg in
		--*=*)
			name=${arg%%=*}
			val=${arg#*=}
			hasval=1
			;;
		*)
			name=$arg
			val=
			hasval=0
			;;
		esac
		# The flag table: install.ps1 accepts the same names (checked by installer tests).
		case $name in
		--server) value && SERVER=$val ;;
		--token) value && TOKEN=$val && TOKEN_SET=1 ;;
		--token-file) value && TOKEN_FILE=$val ;;
		--site-id) value && SITE_ID=$val && SITE_ID_SET=1 ;;
		--site-type) value && SITE_TYPE=$val ;;
		--site-name) value && SITE_NAME=$val ;;
		--site-country) value && SITE_COUNTRY=$val ;;
		--site-region) value && SITE_REGION=$val ;;
		--site-timezone) value && SITE_TIMEZONE=$val ;;
		--environment) value && ENVIRONMENT=$val ;;
		--mode) value && MODE=$val ;;
		--collector-version) value && COLLECTOR_VERSION=$val ;;
		--artifacts) value && ARTIFACTS=$val ;;
		--minisign-key) value && MINISIGN_KEY=$val ;;
		--root-key) value && ROOT_KEY=$val && ROOT_KEY_SET=1 ;;
		--catalog-mirrors) value && MIRRORS=$val ;;
		--root) value && ROOT=$val && ROOT_SET=1 ;;
		--no-start) switch && NO_START=1 ;;
		--dry-run) switch && DRY_RUN=1 ;;
		--uninstall) switch && UNINSTALL=1 ;;
		--purge) switch && PURGE=1 ;;
		--help) switch && HELP=1 ;;
		*) err "$arg: unknown flag" ;;
		esac
		if [ "$used_next" = 1 ]; then
			shift
		fi
	done
}

# ---------------------------------------------------------------- validation

has_cntrl() {
	case $1 in
	*[[:cntrl:]]*) return 0 ;;
	esac
	return 1
}

# check_text FLAG VALUE: a single-line attribute value the supervisor will not expand.
check_text() {
	if has_cntrl "$2"; then
		err "$1: must be one line without control characters"
		return 1
	fi
	case $2 in
	*'$'*)
		err "$1 \"$2\": must not contain \$ (the supervisor expands \${...} in its configuration)"
		return 1
		;;
	esac
	if [ "${#2}" -gt "$MAX_VALUE_LEN" ]; then
		err "$1: longer than $MAX_VALUE_LEN characters"
		return 1
	fi
	return 0
}

required_text() {
	if [ -z "$2" ]; then
		err "$1 is required"
		return 1
	fi
	check_text "$1" "$2"
}

ere() {
	printf '%s\n' "$2" | grep -Eq "$1"
}

valid_timezone() {
	tz=$1
	case $tz in
	'' | /* | *..* | */ | *//* | posix/* | right/* | posixrules | localtime | Factory) return 1 ;;
	*[!A-Za-z0-9_+/-]*) return 1 ;;
	esac
	zdir=${TZDIR:-/usr/share/zoneinfo}
	[ -f "$zdir/$tz" ] || return 1
	magic=$(dd if="$zdir/$tz" bs=4 count=1 2>/dev/null) || return 1
	[ "$magic" = TZif ]
}

detect_arch() {
	m=$(uname -m)
	case $m in
	x86_64 | amd64) ARCH=amd64 ;;
	aarch64 | arm64) ARCH=arm64 ;;
	*)
		ARCH=
		err "unsupported machine architecture $m (supported: x86_64, aarch64)"
		;;
	esac
}

# check_key FLAG VALUE: VALUE is a minisign public key (RW...) or a minisign .pub file
# holding one; sets key to the key, or reports a problem naming FLAG.
check_key() {
	key=$2
	if [ -f "$key" ]; then
		# A minisign .pub file: an "untrusted comment:" line, then the key.
		key=$(grep -v '^untrusted comment:' "$key" | tr -d ' \r\t' | grep -v '^$' | head -n 1 || :)
	fi
	if ere '^RW[A-Za-z0-9+/]{54}$' "$key" && ! has_cntrl "$key"; then
		return 0
	fi
	err "$1: not a minisign public key (RW followed by 54 base64 characters) nor a file holding one"
	return 1
}

need_tool() {
	if ! command -v "$1" >/dev/null 2>&1; then
		err "$1 not found: $2"
	fi
}

validate_common() {
	if [ "$ROOT_SET" = 1 ]; then
		if [ -z "$ROOT" ]; then
			err "--root: empty"
		elif has_cntrl "$ROOT"; then
			err "--root: must be one line without control characters"
		elif [ -e "$ROOT" ] && [ ! -d "$ROOT" ]; then
			err "--root $ROOT: not a directory"
		elif [ "$NO_START" != 1 ]; then
			err "--root needs --no-start: services can only be registered on this system's root"
		fi
	elif [ "$(id -u)" != 0 ]; then
		err "must run as root (or install under a prefix with --root DIR --no-start)"
	fi
	if [ "$NO_START" != 1 ] && [ "$ROOT_SET" != 1 ]; then
		need_tool systemctl "services are registered with systemd (use --no-start to skip that)"
	fi
}

validate_install() {
	case $MODE in
	binary | container) ;;
	*) err "--mode \"$MODE\": must be binary or container" ;;
	esac

	if [ -z "$SERVER" ]; then
		err "--server is required"
	elif has_cntrl "$SERVER"; then
		err "--server: must be one line without control characters"
	else
		case $SERVER in
		*[[:space:]\"\$\\]*) err "--server \"$SERVER\": must not contain spaces, quotes, \$ or backslashes" ;;
		ws://?* | wss://?* | http://?* | https://?*)
			rest=${SERVER#*://}
			host=${rest%%/*}
			host=${host%%\?*}
			if [ -z "$host" ]; then
				err "--server \"$SERVER\": has no host"
			fi
			;;
		*) err "--server \"$SERVER\": must be a ws://, wss://, http:// or https:// URL" ;;
		esac
	fi

	old_ifs=$IFS
	IFS=,
	for m in $MIRRORS; do
		case $m in
		'' | *://* | *[!A-Za-z0-9.:*\[\]-]* | ?*\** | \* | \*[!.]* | *:) err "--catalog-mirrors \"$m\": a host, host:port or *.example.com, not a URL" ;;
		esac
	done
	IFS=$old_ifs

	if [ "$TOKEN_SET" = 1 ] && [ -n "$TOKEN_FILE" ]; then
		err "--token and --token-file: give only one of them"
	elif [ -n "$TOKEN_FILE" ]; then
		if [ ! -f "$TOKEN_FILE" ] || [ ! -r "$TOKEN_FILE" ]; then
			err "--token-file $TOKEN_FILE: not a readable file"
		else
			TOKEN=$(tr -d '\r' <"$TOKEN_FILE")
			TOKEN_SET=1
			if [ -z "$TOKEN" ]; then
				err "--token-file $TOKEN_FILE: the token is empty"
			fi
		fi
	elif [ "$TOKEN_SET" != 1 ]; then
		err "--token or --token-file is required"
	elif [ -z "$TOKEN" ]; then
		err "--token: the token is empty"
	fi
	if [ -n "$TOKEN" ]; then
		# Bearer token characters (RFC 6750 token68): safe in a header and in quoted YAML.
		case $TOKEN in
		*[!A-Za-z0-9._~+/=-]*) err "token: contains characters not allowed in a bearer token (allowed: A-Z a-z 0-9 - . _ ~ + / =)" ;;
		esac
	fi

	if [ "$SITE_ID_SET" != 1 ] || [ -z "$SITE_ID" ]; then
		err "--site-id is required"
	else
		check_text --site-id "$SITE_ID" || :
	fi

	if required_text --site-type "$SITE_TYPE"; then
		case $SITE_TYPE in
		*[[:upper:]]*) err "--site-type \"$SITE_TYPE\": must be lower case ($(printf '%s' "$SITE_TYPE" | tr '[:upper:]' '[:lower:]'))" ;;
		esac
	fi

	if [ -n "$SITE_NAME" ]; then
		check_text --site-name "$SITE_NAME" || :
	fi
	if [ -n "$SITE_REGION" ]; then
		check_text --site-region "$SITE_REGION" || :
	fi

	if required_text --site-country "$SITE_COUNTRY"; then
		case $SITE_COUNTRY in
		[a-z][a-z] | [A-Z][a-z] | [a-z][A-Z])
			err "--site-country \"$SITE_COUNTRY\": must be upper case ($(printf '%s' "$SITE_COUNTRY" | tr '[:lower:]' '[:upper:]'))"
			;;
		[A-Z][A-Z])
			case $ISO3166 in
			*[[:space:]]"$SITE_COUNTRY"[[:space:]]*) ;;
			*) err "--site-country \"$SITE_COUNTRY\": not an ISO 3166-1 alpha-2 country code" ;;
			esac
			;;
		*) err "--site-country \"$SITE_COUNTRY\": must be an ISO 3166-1 alpha-2 code (two upper-case letters, e.g. DE)" ;;
		esac
	fi

	if required_text --site-timezone "$SITE_TIMEZONE"; then
		if ! valid_timezone "$SITE_TIMEZONE"; then
			err "--site-timezone \"$SITE_TIMEZONE\": not an IANA time zone known in ${TZDIR:-/usr/share/zoneinfo} (e.g. Europe/Amsterdam)"
		fi
	fi

	required_text --environment "$ENVIRONMENT" || :

	if [ "$MODE" = binary ]; then
		COLLECTOR_VERSION=${COLLECTOR_VERSION#v}
		if [ -z "$COLLECTOR_VERSION" ]; then
			err "--collector-version is required in binary mode"
		elif has_cntrl "$COLLECTOR_VERSION" ||
			! ere '^[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.-]+)?$' "$COLLECTOR_VERSION"; then
			err "--collector-version \"$COLLECTOR_VERSION\": must be a version like 0.149.0"
		fi
	fi

	ARTIFACTS_URL=0
	if [ -z "$ARTIFACTS" ]; then
		err "--artifacts is required"
	elif has_cntrl "$ARTIFACTS"; then
		err "--artifacts: must be one line without control characters"
	else
		case $ARTIFACTS in
		http://?* | https://?*)
			ARTIFACTS_URL=1
			if ! command -v curl >/dev/null 2>&1 && ! command -v wget >/dev/null 2>&1; then
				err "--artifacts $ARTIFACTS: neither curl nor wget is installed"
			fi
			;;
		*://*) err "--artifacts \"$ARTIFACTS\": only http:// and https:// URLs or a directory" ;;
		*) [ -d "$ARTIFACTS" ] || err "--artifacts $ARTIFACTS: no such directory" ;;
		esac
	fi

	if [ -z "$MINISIGN_KEY" ]; then
		err "--minisign-key is required"
	elif check_key --minisign-key "$MINISIGN_KEY"; then
		MINISIGN_KEY=$key
	fi
	if [ "$ROOT_KEY_SET" = 1 ] && check_key --root-key "$ROOT_KEY"; then
		ROOT_KEY=$key
	fi

	if [ "$PURGE" = 1 ]; then
		err "--purge only goes with --uninstall"
	fi

	detect_arch
	if [ "$DRY_RUN" != 1 ]; then
		need_tool sha256sum "needed to check artifacts (coreutils)"
		need_tool minisign "needed to check artifact signatures (Debian/Ubuntu: apt-get install minisign)"
		if [ "$MODE" = binary ]; then
			need_tool tar "needed to unpack the collector"
			need_tool gzip "needed to unpack the collector"
		fi
	fi
}

report_errors() {
	if [ "$NERRORS" -gt 0 ]; then
		if [ "$NERRORS" = 1 ]; then
			printf '%s: 1 problem, nothing was changed:\n%s' "$PROG" "$ERRORS" >&2
		else
			printf '%s: %s problems, nothing was changed:\n%s' "$PROG" "$NERRORS" "$ERRORS" >&2
		fi
		printf 'Run %s --help for the flags.\n' "$PROG" >&2
		exit 2
	fi
}

# ---------------------------------------------------------------- layout

set_layout() {
	if [ "$ROOT_SET" = 1 ]; then
		case $ROOT in
		/*) ;;
		*) ROOT=$(pwd)/$ROOT ;;
		esac
		while [ "${ROOT%/}" != "$ROOT" ]; do ROOT=${ROOT%/}; done
	fi
	R=$ROOT
	OPT=$R/opt/myriarch
	BIN=$OPT/bin
	COLL=$OPT/collector
	ETC_M=$R/etc/myriarch
	ETC_O=$R/etc/otelcol
	STORAGE=$R/var/lib/otelcol/supervisor
	STATE=$R/var/lib/myriarch-updater
	UNITS=$R/etc/systemd/system
	SUP_CONF=$ETC_O/supervisor.yaml
	UPD_CONF=$ETC_M/updater.yaml
	TOKEN_PATH=$ETC_M/token
}

# ---------------------------------------------------------------- generated files

# yq VALUE: VALUE as the inside of a YAML double-quoted string.
yq() {
	case $1 in
	*[\\\"]*) printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' ;;
	*) printf '%s' "$1" ;;
	esac
}

# server_host is the host of --server (without user or port): artifact downloads
# come from it.
server_host() {
	h=${SERVER#*://}
	h=${h%%/*}
	h=${h%%\?*}
	h=${h##*@}
	case $h in
	\[*\]:*) h=${h%:*} ;;
	\[*) ;;
	*:*) h=${h%:*} ;;
	esac
	printf '%s' "$h"
}

endpoint() {
	rest=${SERVER#*://}
	case $rest in
	*/?*) printf '%s' "$SERVER" ;;
	*) printf '%s/v1/opamp' "${SERVER%/}" ;;
	esac
}

supervisor_yaml() {
	if [ "$MODE" = container ]; then
		# Paths as the collector container sees them: it mounts this file and the storage dir.
		sx=/opt/myriarch/collector/current/$COLLECTOR_EXE
		sd=/var/lib/otelcol/supervisor
	else
		sx=$COLL/current/$COLLECTOR_EXE
		sd=$STORAGE
	fi
	cat <<EOF
# Written by the myriarch site installer (install.sh); re-run it to change this file.
server:
  endpoint: "$(yq "$(endpoint)")"
  headers:
    Authorization: "Bearer $TOKEN"
capabilities:
  accepts_remote_config: true
  reports_remote_config: true
  reports_effective_config: true
  accepts_restart_command: true
  reports_health: true
  reports_heartbeat: true
  # The collector sends its own telemetry only where its fleet names a destination.
  reports_own_metrics: true
  reports_own_logs: true
  reports_own_traces: true
storage:
  directory: "$(yq "$sd")"
agent:
  executable: "$(yq "$sx")"
  description:
    non_identifying_attributes:
      site.id: "$(yq "$SITE_ID")"
      site.type: "$(yq "$SITE_TYPE")"
EOF
	if [ -n "$SITE_NAME" ]; then
		printf '      site.name: "%s"\n' "$(yq "$SITE_NAME")"
	fi
	printf '      site.country: "%s"\n' "$(yq "$SITE_COUNTRY")"
	if [ -n "$SITE_REGION" ]; then
		printf '      site.region: "%s"\n' "$(yq "$SITE_REGION")"
	fi
	printf '      site.timezone: "%s"\n' "$(yq "$SITE_TIMEZONE")"
	printf '      deployment.environment.name: "%s"\n' "$(yq "$ENVIRONMENT")"
}

updater_yaml() {
	cat <<EOF
# Written by the myriarch site installer (install.sh); re-run it to change this file.
server:
  endpoint: "$(yq "$(endpoint)")"
  token_file: "$(yq "$TOKEN_PATH")"
mode: $MODE
supervisor:
  storage_dir: "$(yq "$STORAGE")"
EOF
	if [ "$MODE" = binary ]; then
		cat <<EOF
  control: service
  service: $SUPERVISOR_UNIT
EOF
	fi
	cat <<EOF
collector:
  package: $COLLECTOR_PACKAGE
  root: "$(yq "$COLL")"
  executable: $COLLECTOR_EXE
EOF
	if [ "$MODE" = container ]; then
		cat <<EOF
container:
  name: $CONTAINER_NAME
EOF
	fi
	cat <<EOF
trust:
  # Going back to a collector version this host ran and confirmed healthy is allowed;
  # an older version it never confirmed is refused unless allow_downgrade: true.
  minisign_public_keys:
    - "$MINISIGN_KEY"
EOF
	if [ -n "$ROOT_KEY" ]; then
		# The estate's keyring, signed by this root key, brings the signing keys and revocations.
		cat <<EOF
  root_keys:
    - "$ROOT_KEY"
EOF
	fi
	cat <<EOF
  require_signature: true
  download_hosts:
    - "$(yq "$(server_host)")"
EOF
	old_ifs=$IFS
	IFS=,
	for m in $MIRRORS; do
		printf '    - "%s"\n' "$(yq "$m")"
	done
	IFS=$old_ifs
	cat <<EOF
state_dir: "$(yq "$STATE")"
EOF
}

# The units are packaging/systemd/*.service with every path under the install root.
supervisor_unit() {
	cat <<EOF
# The upstream OpAMP Supervisor, which runs the OpenTelemetry Collector of this host.
# Installed by the myriarch site installer (installer/install.sh).
[Unit]
Description=OpenTelemetry Collector under the OpAMP Supervisor (myriarch)
Documentation=https://github.com/myriarch/myriarch
After=network-online.target
Wants=network-online.target
ConditionPathExists=$SUP_CONF

[Service]
Type=simple
ExecStart=$BIN/opampsupervisor --config $SUP_CONF
# Only SIGINT makes the supervisor stop its collector; with SIGTERM the collector is left
# running and keeps its ports. KillMode=mixed lets the supervisor stop the collector itself
# and sends SIGKILL to whatever is left only after TimeoutStopSec.
KillSignal=SIGINT
KillMode=mixed
TimeoutStopSec=30s
Restart=on-failure
RestartSec=5s
# The collector may read logs and host metrics anywhere, so it runs as root; the hardening
# below only removes what a collector never needs.
NoNewPrivileges=yes
ProtectSystem=full
ProtectKernelModules=yes
RestrictSUIDSGID=yes
RestrictRealtime=yes
LockPersonality=yes

[Install]
WantedBy=multi-user.target
EOF
}

# The updater's unit is agent/service.SystemdUnit for $BIN and $UPD_CONF, word for word
# (the installer tests check it; go test ./agent/service -update renders the packaged one).
updater_unit() {
	cat <<EOF
# myriarch-updater: installs new collector versions on this host and restarts
# otelcol-supervisor.service for them. Installed by the myriarch-updater deb/rpm package,
# installer/install.sh or myriarch-updater install (all the same unit).
[Unit]
Description=myriarch-updater (collector updates for this host)
Documentation=https://github.com/myriarch/myriarch
After=network-online.target
Wants=network-online.target
# No start rate limit: the updater is what repairs the host's collector.
StartLimitIntervalSec=0
# A package install enables the unit before any configuration exists: it starts once
# its configuration file is written.
ConditionPathExists=$UPD_CONF

[Service]
Type=simple
ExecStart=$BIN/myriarch-updater run --config $UPD_CONF
Restart=on-failure
RestartSec=5s
# SIGTERM goes to the updater alone; it stops a supervisor it runs with SIGINT (the only
# clean stop) and whatever is left is killed after TimeoutStopSec.
KillMode=mixed
KillSignal=SIGTERM
TimeoutStopSec=150
# Optional environment, e.g. HTTPS_PROXY and NO_PROXY.
EnvironmentFile=-/etc/default/myriarch-updater
EnvironmentFile=-/etc/sysconfig/myriarch-updater
# It replaces files under /opt/myriarch, writes /var/lib and restarts the supervisor
# service (or talks to Docker), so it runs as root; /usr, /boot and /etc stay read-only.
NoNewPrivileges=yes
ProtectSystem=full
ProtectHome=read-only
PrivateTmp=yes
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectControlGroups=yes
RestrictSUIDSGID=yes
RestrictRealtime=yes
LockPersonality=yes

[Install]
WantedBy=multi-user.target
EOF
}

# ---------------------------------------------------------------- artifacts

fetch() {
	dest=$WORK/dl/$1
	if [ "$ARTIFACTS_URL" = 1 ]; then
		url=${ARTIFACTS%/}/$1
		if command -v curl >/dev/null 2>&1; then
			curl -fsSL --proto '=http,https' --retry 3 -o "$dest" "$url" ||
				die "cannot download $url; nothing was installed"
		else
			wget -q -O "$dest" "$url" || die "cannot download $url; nothing was installed"
		fi
	else
		[ -f "$ARTIFACTS/$1" ] || die "artifact $ARTIFACTS/$1 not found; nothing was installed"
		cp "$ARTIFACTS/$1" "$dest"
	fi
}

# verify NAME: fetch NAME, NAME.sha256 and NAME.minisig, check digest and signature.
verify() {
	fetch "$1"
	fetch "$1.sha256"
	fetch "$1.minisig"
	want=$(awk 'NR == 1 { print tolower($1) }' "$WORK/dl/$1.sha256")
	got=$(sha256sum "$WORK/dl/$1" | awk '{ print $1 }')
	if ! ere '^[0-9a-f]{64}$' "$want"; then
		die "artifact $1: $1.sha256 holds no SHA-256 digest; nothing was installed"
	fi
	if [ "$want" != "$got" ]; then
		die "artifact $1: SHA-256 mismatch (expected $want, got $got); nothing was installed"
	fi
	if ! minisign -V -q -P "$MINISIGN_KEY" -m "$WORK/dl/$1" -x "$WORK/dl/$1.minisig" >"$WORK/minisign.out" 2>&1; then
		die "artifact $1: minisign signature does not verify with the given key ($(tr '\n' ' ' <"$WORK/minisign.out")); nothing was installed"
	fi
}

# unpack_collector ARCHIVE: extract into $WORK/collector, refusing anything but plain
# files and directories inside the archive, then run the executable once.
unpack_collector() {
	a=$WORK/dl/$1
	tar -tzf "$a" >"$WORK/tar.names" 2>/dev/null || die "artifact $1: not a gzip tar archive; nothing was installed"
	tar -tvzf "$a" >"$WORK/tar.long" 2>/dev/null || die "artifact $1: not a gzip tar archive; nothing was installed"
	if grep -Eq '^/|(^|/)\.\.(/|$)' "$WORK/tar.names"; then
		die "artifact $1: holds an absolute path or '..'; nothing was installed"
	fi
	if grep -vq '^[-d]' "$WORK/tar.long"; then
		die "artifact $1: holds links or special files; nothing was installed"
	fi
	mkdir "$WORK/collector"
	tar -xzf "$a" -C "$WORK/collector" || die "artifact $1: cannot unpack; nothing was installed"
	x=$WORK/collector/$COLLECTOR_EXE
	if [ ! -f "$x" ]; then
		die "artifact $1: has no $COLLECTOR_EXE at its top; nothing was installed"
	fi
	chmod 755 "$x"
	# Catches a wrong architecture, corruption or a mislabeled build before anything changes.
	if ! out=$("$x" --version 2>&1); then
		die "artifact $1: $COLLECTOR_EXE --version failed; nothing was installed"
	fi
	case $out in
	*"$COLLECTOR_VERSION"*) ;;
	*) die "artifact $1: $COLLECTOR_EXE --version does not report $COLLECTOR_VERSION; nothing was installed" ;;
	esac
}

# ---------------------------------------------------------------- applying changes

CHANGES=0
CHANGED_SUP=0
CHANGED_UPD=0
CHANGED_UNITS=0

mark() {
	CHANGES=$((CHANGES + 1))
	case $1 in
	sup) CHANGED_SUP=1 ;;
	upd) CHANGED_UPD=1 ;;
	sup-unit)
		CHANGED_SUP=1
		CHANGED_UNITS=1
		;;
	upd-unit)
		CHANGED_UPD=1
		CHANGED_UNITS=1
		;;
	esac
}

file_mode() {
	stat -c %a "$1" 2>/dev/null || stat -f %Lp "$1"
}

ensure_dir() {
	if [ -d "$1" ] && [ ! -L "$1" ]; then
		if [ "$(file_mode "$1")" != "$2" ]; then
			if [ "$DRY_RUN" = 1 ]; then
				say "would chmod $2 $1"
			else
				chmod "$2" "$1"
				say "chmod $2 $1"
			fi
			CHANGES=$((CHANGES + 1))
		fi
		return 0
	fi
	if [ -e "$1" ] || [ -L "$1" ]; then
		die "$1 exists and is not a directory"
	fi
	if [ "$DRY_RUN" = 1 ]; then
		say "would create directory $1 ($2)"
	else
		mkdir -p "$1"
		chmod "$2" "$1"
		say "created $1"
	fi
	CHANGES=$((CHANGES + 1))
}

# put SRC DEST MODE GROUP: install SRC as DEST unless DEST already has that content and mode.
put() {
	if [ -f "$2" ] && [ ! -L "$2" ] && cmp -s "$1" "$2" && [ "$(file_mode "$2")" = "$3" ]; then
		return 0
	fi
	mark "$4"
	if [ "$DRY_RUN" = 1 ]; then
		if [ -e "$2" ]; then say "would update $2 ($3)"; else say "would write $2 ($3)"; fi
		return 0
	fi
	tmp=$(dirname "$2")/.$(basename "$2").tmp.$$
	rm -f "$tmp"
	(umask 077 && cp "$1" "$tmp")
	chmod "$3" "$tmp"
	mv -f "$tmp" "$2"
	say "wrote $2"
}

install_collector() {
	vdir=$COLL/versions/$COLLECTOR_VERSION
	if [ "$DRY_RUN" = 1 ]; then
		if [ -d "$vdir" ]; then
			say "would check $vdir against the verified artifact"
		else
			say "would unpack $COLLECTOR_ART into $vdir"
		fi
	elif [ -d "$vdir" ] && cmp -s "$WORK/collector/$COLLECTOR_EXE" "$vdir/$COLLECTOR_EXE"; then
		:
	else
		tmp=$COLL/versions/.$COLLECTOR_VERSION.tmp.$$
		old=$COLL/versions/.$COLLECTOR_VERSION.old.$$
		rm -rf "$tmp" "$old"
		mkdir "$tmp"
		cp -R "$WORK/collector/." "$tmp/"
		chmod 755 "$tmp" "$tmp/$COLLECTOR_EXE"
		if [ -e "$vdir" ]; then
			mv "$vdir" "$old"
		fi
		mv "$tmp" "$vdir"
		rm -rf "$old"
		say "installed collector $COLLECTOR_VERSION in $vdir"
		mark sup
	fi

	want=versions/$COLLECTOR_VERSION
	cur=$COLL/current
	if [ -L "$cur" ] && [ "$(readlink "$cur")" = "$want" ]; then
		return 0
	fi
	if [ -e "$cur" ] && [ ! -L "$cur" ]; then
		die "$cur exists and is not a symbolic link"
	fi
	mark sup
	if [ "$DRY_RUN" = 1 ]; then
		say "would switch $cur to $want"
		return 0
	fi
	tmp=$COLL/.current.tmp.$$
	rm -f "$tmp"
	ln -s "$want" "$tmp"
	# rename(2) over the old link: the switch is atomic for a running supervisor.
	if ! mv -T -f "$tmp" "$cur" 2>/dev/null; then
		rm -f "$tmp"
		ln -sfn "$want" "$cur"
	fi
	say "switched $cur to $want"
}

generate() {
	mkdir -p "$WORK/gen"
	(umask 077 && printf '%s\n' "$TOKEN" >"$WORK/gen/token")
	(umask 077 && supervisor_yaml >"$WORK/gen/supervisor.yaml")
	updater_yaml >"$WORK/gen/updater.yaml"
	supervisor_unit >"$WORK/gen/$SUPERVISOR_UNIT.service"
	updater_unit >"$WORK/gen/$UPDATER_UNIT.service"
}

services() {
	if [ "$MODE" = binary ]; then
		units="$SUPERVISOR_UNIT $UPDATER_UNIT"
	else
		units=$UPDATER_UNIT
	fi
	if [ "$NO_START" = 1 ]; then
		say "services not registered (--no-start): $units"
		restart=''
		if [ "$MODE" = binary ] && [ "$CHANGED_SUP" = 1 ]; then
			restart="$restart $SUPERVISOR_UNIT"
		fi
		if [ "$CHANGED_UPD" = 1 ]; then
			restart="$restart $UPDATER_UNIT"
		fi
		if [ -n "$restart" ]; then
			say "changed, a running service needs a restart:$restart"
		fi
		return 0
	fi
	run=
	if [ "$DRY_RUN" = 1 ]; then
		run='echo'
		say "would run:"
	fi
	if [ "$CHANGED_UNITS" = 1 ]; then
		$run systemctl daemon-reload
	fi
	for u in $units; do
		changed=$CHANGED_UPD
		if [ "$u" = "$SUPERVISOR_UNIT" ]; then
			changed=$CHANGED_SUP
		fi
		$run systemctl enable --quiet "$u.service"
		if [ "$changed" = 1 ]; then
			$run systemctl restart "$u.service"
		elif [ "$DRY_RUN" = 1 ] || ! systemctl is-active --quiet "$u.service"; then
			$run systemctl start "$u.service"
		fi
	done
}

do_install() {
	COLLECTOR_ART=otelcol_${COLLECTOR_VERSION}_linux_${ARCH}.tar.gz
	SUP_ART=opampsupervisor_linux_$ARCH
	UPD_ART=myriarch-updater_linux_$ARCH
	SIG_ART=myriarch-sigstore_linux_$ARCH

	WORK=$(mktemp -d "${TMPDIR:-/tmp}/myriarch-install.XXXXXX")
	trap 'rm -rf "$WORK"' EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	mkdir "$WORK/dl"

	if [ "$DRY_RUN" = 1 ]; then
		say "plan (dry run, nothing is changed):"
		say "  mode $MODE, endpoint $(endpoint), artifacts from $ARTIFACTS"
		if [ "$MODE" = binary ]; then
			say "would fetch and verify (sha256 + minisign): $COLLECTOR_ART $SUP_ART $UPD_ART $SIG_ART"
		else
			say "would fetch and verify (sha256 + minisign): $UPD_ART $SIG_ART"
		fi
	else
		# Every artifact is verified before the first file is written.
		if [ "$MODE" = binary ]; then
			verify "$COLLECTOR_ART"
			verify "$SUP_ART"
		fi
		verify "$UPD_ART"
		verify "$SIG_ART"
		if [ "$MODE" = binary ]; then
			unpack_collector "$COLLECTOR_ART"
		fi
	fi
	generate

	if [ "$ROOT_SET" = 1 ] && [ ! -d "$ROOT" ]; then
		if [ "$DRY_RUN" = 1 ]; then say "would create $ROOT"; else mkdir -p "$ROOT"; fi
	fi
	umask 022
	ensure_dir "$OPT" 755
	ensure_dir "$BIN" 755
	ensure_dir "$ETC_M" 755
	ensure_dir "$ETC_O" 755
	ensure_dir "$STORAGE" 700
	ensure_dir "$STATE" 700
	if [ ! -d "$UNITS" ]; then
		ensure_dir "$UNITS" 755
	fi

	if [ "$MODE" = binary ]; then
		ensure_dir "$COLL" 755
		ensure_dir "$COLL/versions" 755
		install_collector
		if [ "$DRY_RUN" = 1 ]; then
			say "would install $BIN/opampsupervisor (0755) if it differs from $SUP_ART"
		else
			put "$WORK/dl/$SUP_ART" "$BIN/opampsupervisor" 755 sup
		fi
	fi
	# The updater runs its Sigstore verifier from its own directory: the helper goes first,
	# so that a new updater never starts without it.
	if [ "$DRY_RUN" = 1 ]; then
		say "would install $BIN/myriarch-sigstore (0755) if it differs from $SIG_ART"
		say "would install $BIN/myriarch-updater (0755) if it differs from $UPD_ART"
	else
		put "$WORK/dl/$SIG_ART" "$BIN/myriarch-sigstore" 755 upd
		put "$WORK/dl/$UPD_ART" "$BIN/myriarch-updater" 755 upd
	fi

	put "$WORK/gen/token" "$TOKEN_PATH" 600 upd
	put "$WORK/gen/supervisor.yaml" "$SUP_CONF" 600 sup
	put "$WORK/gen/updater.yaml" "$UPD_CONF" 640 upd
	if [ "$MODE" = binary ]; then
		put "$WORK/gen/$SUPERVISOR_UNIT.service" "$UNITS/$SUPERVISOR_UNIT.service" 644 sup-unit
	fi
	put "$WORK/gen/$UPDATER_UNIT.service" "$UNITS/$UPDATER_UNIT.service" 644 upd-unit

	if [ "$DRY_RUN" != 1 ] && [ "$CHANGES" -gt 0 ]; then
		sync
	fi
	services
	if [ "$MODE" = container ]; then
		say "container mode: run the collector container as $CONTAINER_NAME, mounting $SUP_CONF at /etc/otelcol/supervisor.yaml and $STORAGE at /var/lib/otelcol/supervisor"
	fi
	if [ "$DRY_RUN" = 1 ]; then
		say "dry run: nothing was changed"
	elif [ "$CHANGES" = 0 ]; then
		say "nothing changed: the installation already matches these flags"
	else
		say "done: $CHANGES change(s)"
	fi
}

# remove PATH...: delete files or trees, or say what would be deleted.
remove() {
	for p in "$@"; do
		if [ -e "$p" ] || [ -L "$p" ]; then
			if [ "$DRY_RUN" = 1 ]; then
				say "would remove $p"
			else
				rm -rf "$p"
				say "removed $p"
			fi
		fi
	done
}

remove_empty_dir() {
	for d in "$@"; do
		if [ -d "$d" ] && [ -z "$(ls -A "$d")" ]; then
			if [ "$DRY_RUN" = 1 ]; then say "would remove $d"; else rmdir "$d" && say "removed $d"; fi
		fi
	done
}

do_uninstall() {
	if [ "$NO_START" != 1 ]; then
		for u in $UPDATER_UNIT $SUPERVISOR_UNIT; do
			if [ -f "$UNITS/$u.service" ]; then
				if [ "$DRY_RUN" = 1 ]; then
					say "would run: systemctl disable --now $u.service"
				else
					systemctl disable --now "$u.service" || :
				fi
			fi
		done
	fi
	remove "$UNITS/$UPDATER_UNIT.service" "$UNITS/$SUPERVISOR_UNIT.service"
	if [ "$NO_START" != 1 ] && [ "$DRY_RUN" != 1 ]; then
		systemctl daemon-reload || :
	fi
	remove "$BIN/myriarch-updater" "$BIN/myriarch-sigstore" "$BIN/opampsupervisor" "$COLL"
	remove_empty_dir "$BIN" "$OPT"
	if [ "$PURGE" = 1 ]; then
		remove "$ETC_M" "$SUP_CONF" "$STORAGE" "$STATE"
		remove_empty_dir "$ETC_O" "$R/var/lib/otelcol"
	else
		say "kept configuration and data ($ETC_M, $SUP_CONF, $STORAGE, $STATE); --purge removes them"
	fi
	if [ "$DRY_RUN" = 1 ]; then say "dry run: nothing was changed"; fi
}

main() {
	parse_flags "$@"
	if [ "$HELP" = 1 ] && [ "$NERRORS" = 0 ]; then
		usage
		exit 0
	fi
	if [ "$UNINSTALL" = 1 ]; then
		validate_common
		report_errors
		set_layout
		do_uninstall
		return 0
	fi
	validate_common
	validate_install
	report_errors
	set_layout
	do_install
}

main "$@"
