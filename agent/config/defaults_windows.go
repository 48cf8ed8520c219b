package config

import (
	"os"
	"path/filepath"
)

func programData() string {
	if d := os.Getenv("ProgramData"); d != "" {
		return d
	}
	return `C:\ProgramData`
}

func defaultConfigPath() string { return filepath.Join(programData(), "Myriarch", "updater.yaml") }
func defaultSupervisorStorageDir() string {
	return filepath.Join(programData(), "Otelcol", "Supervisor")
}
func defaultCollectorRoot() string       { return filepath.Join(programData(), "Myriarch", "collector") }
func defaultCollectorExecutable() string { return "otelcol-contrib.exe" }
func defaultDockerHost() string          { return "npipe:////./pipe/docker_engine" }
func defaultStateDir() string            { return filepath.Join(programData(), "Myriarch", "updater") }
