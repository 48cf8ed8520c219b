// Package supervisorstate reads and watches the upstream OpAMP Supervisor's
// <storage_dir>/persistent_state.yaml, which holds the collector's OpAMP
// instance UID. The updater reports that UID so the server can pair the
// updater with its collector.
package supervisorstate

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/uuid"
	"go.yaml.in/yaml/v3"
)

// FileName is the supervisor's state file inside its storage directory.
const FileName = "persistent_state.yaml"

// maxFileSize bounds what we read: the real file is about 150 bytes.
const maxFileSize = 64 << 10

// State is the part of persistent_state.yaml the updater uses.
type State struct {
	// InstanceID is the supervisor's (and so the collector's) OpAMP
	// instance UID in canonical UUID form.
	InstanceID string
	// LastRemoteConfigStatus is nil until the supervisor has applied a remote config.
	LastRemoteConfigStatus *RemoteConfigStatus
}

// RemoteConfigStatus mirrors the supervisor's persisted remote config status.
type RemoteConfigStatus struct {
	Status               int    `yaml:"status"`
	LastRemoteConfigHash string `yaml:"last_remote_config_hash"`
	ErrorMessage         string `yaml:"error_message"`
}

type fileFormat struct {
	InstanceID             string              `yaml:"instance_id"`
	LastRemoteConfigStatus *RemoteConfigStatus `yaml:"last_remote_config_status"`
}

// Path returns the state file path for a storage directory.
func Path(storageDir string) string { return filepath.Join(storageDir, FileName) }

// Read reads the state file in storageDir. A missing file (the supervisor has
// not started yet) yields an error that matches fs.ErrNotExist; anything
// unreadable or malformed yields an error naming the file and the reason.
func Read(storageDir string) (State, error) {
	data, err := readBounded(Path(storageDir))
	if err != nil {
		return State{}, err
	}
	return Parse(Path(storageDir), data)
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("supervisor state: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("supervisor state: read %s: %w", path, err)
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("supervisor state: %s is larger than %d bytes", path, maxFileSize)
	}
	return data, nil
}

// Parse parses the content of a persistent_state.yaml; name is used in errors.
func Parse(name string, data []byte) (State, error) {
	var ff fileFormat
	if err := yaml.Unmarshal(data, &ff); err != nil {
		return State{}, fmt.Errorf("supervisor state: %s is malformed: %s", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if strings.TrimSpace(ff.InstanceID) == "" {
		return State{}, fmt.Errorf("supervisor state: %s has no instance_id", name)
	}
	id, err := uuid.Parse(strings.TrimSpace(ff.InstanceID))
	if err != nil {
		return State{}, fmt.Errorf("supervisor state: %s: instance_id %q is not a UUID", name, ff.InstanceID)
	}
	return State{InstanceID: id.String(), LastRemoteConfigStatus: ff.LastRemoteConfigStatus}, nil
}
