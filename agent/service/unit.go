package service

// systemdUnit is the systemd template kardianos renders (its mini template
// language). It differs from kardianos' default where the updater needs it:
//   - Restart=on-failure after 5 s, with no start rate limit: the updater
//     must come back, it is what repairs the host's collector.
//   - KillMode=mixed: SIGTERM goes to the updater alone, which stops a child
//     supervisor with SIGINT (the only signal that stops it cleanly); only
//     what is left after TimeoutStopSec is killed.
const systemdUnit = `[Unit]
Description={{Description}}
ConditionFileIsExecutable={{Path | cmdEscape}}
StartLimitIntervalSec=0
{{range Dependencies}}{{.}}
{{end}}
[Service]
Type=simple
ExecStart={{Path | cmdEscape}}{{range Arguments}} {{. | cmd}}{{end}}
{{if WorkingDirectory}}WorkingDirectory={{WorkingDirectory | cmdEscape}}
{{end}}{{if UserName}}User={{UserName}}
{{end}}Restart=on-failure
RestartSec=5
KillMode=mixed
KillSignal=SIGTERM
TimeoutStopSec=150
EnvironmentFile=-/etc/default/{{Name}}
EnvironmentFile=-/etc/sysconfig/{{Name}}
{{range EnvVars}}{{.}}
{{end}}
[Install]
WantedBy=multi-user.target
`
