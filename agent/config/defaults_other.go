//go:build !windows

package config

func defaultConfigPath() string           { return "/etc/myriarch/updater.yaml" }
func defaultSupervisorStorageDir() string { return "/var/lib/otelcol/supervisor" }
func defaultCollectorRoot() string        { return "/opt/myriarch/collector" }
func defaultCollectorExecutable() string  { return "otelcol-contrib" }
func defaultDockerHost() string           { return "unix:///var/run/docker.sock" }
func defaultStateDir() string             { return "/var/lib/myriarch-updater" }
