package service

import (
	"fmt"
	"strings"
)

// unitTemplate is the updater's systemd unit: `myriarch-updater install` writes it, the
// myriarch-updater deb/rpm ships it (packaging/systemd/myriarch-updater.service is its
// rendering for the default paths, checked by the tests) and installer/install.sh writes
// the same text. SystemdUnit fills in @CONFIG_PATH@ and @EXEC_START@.
//
// What the updater needs:
//   - Restart=on-failure after 5 s, with no start rate limit: the updater must come
//     back, it is what repairs the host's collector.
//   - KillMode=mixed: SIGTERM goes to the updater alone, which stops a child supervisor
//     with SIGINT (the only signal that stops it cleanly); only what is left after
//     TimeoutStopSec is killed.
//   - ConditionPathExists of its configuration: a package install enables the unit
//     before the configuration is written.
//
// It runs as root (see the unit's comment); the hardening keeps /usr and home
// directories read-only, so a collector root or state directory there cannot be written.
const unitTemplate = `# myriarch-updater: installs new collector versions on this host and restarts
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
ConditionPathExists=@CONFIG_PATH@

[Service]
Type=simple
ExecStart=@EXEC_START@
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
`

// SystemdUnit renders the updater's unit for an updater binary and its configuration
// file, both absolute paths.
func SystemdUnit(executable, configPath string) string {
	return strings.NewReplacer(
		"@CONFIG_PATH@", unitPath(configPath),
		"@EXEC_START@", execProgram(executable)+" run --config "+execArg(configPath),
	).Replace(unitTemplate)
}

// execProgram is the program of a command line in a unit: specifiers (%) are doubled,
// variables are not expanded there, and a path with blanks is double-quoted. systemd
// refuses a program path holding quotes, backslashes or control characters.
func execProgram(s string) string {
	return quoteWord(strings.ReplaceAll(s, "%", "%%"))
}

// execArg is an argument of a command line in a unit (systemd.service(5) "Command
// lines"): specifiers (%) and variables ($) are doubled and a word with blanks, quotes,
// backslashes or control characters is double-quoted with C escapes.
func execArg(s string) string {
	return quoteWord(strings.NewReplacer("%", "%%", "$", "$$").Replace(s))
}

func quoteWord(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return r <= ' ' || r == 0x7f || r == '"' || r == '\'' || r == '\\' || r == ';'
	}) {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < ' ' || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// unitPath is a path as the value of a setting that takes one path (no quoting there):
// specifiers are doubled. A line break cannot be part of such a value; it is written as
// the two characters \n, so the condition names no existing file and fails visibly
// instead of adding a line to the unit.
func unitPath(s string) string {
	return strings.NewReplacer("%", "%%", "\n", `\n`, "\r", `\r`).Replace(s)
}
