// Package identity gives the updater its OpAMP instance UID: a UUIDv7
// generated once and persisted in the state directory (file mode 0600), so
// the server sees the same agent across restarts and upgrades.
package identity

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/uuid"
)

// FileName is the file inside state_dir that holds the UID.
const FileName = "instance_id"

// LoadOrCreate returns the UID stored in stateDir, creating and persisting a
// new UUIDv7 when there is none. A file that exists but does not hold a UUID
// is an error: silently replacing it would make the updater a new agent.
func LoadOrCreate(stateDir string) (uuid.UUID, error) {
	path := filepath.Join(stateDir, FileName)
	id, err := Load(stateDir)
	if err == nil {
		return id, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return uuid.Nil, err
	}
	id, err = uuid.NewV7()
	if err != nil {
		return uuid.Nil, fmt.Errorf("generate instance UID: %w", err)
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return uuid.Nil, fmt.Errorf("create state dir: %w", err)
	}
	if err := writeFileAtomic(path, []byte(id.String()+"\n")); err != nil {
		return uuid.Nil, fmt.Errorf("persist instance UID: %w", err)
	}
	return id, nil
}

// Load reads the persisted UID; fs.ErrNotExist (wrapped) when there is none.
func Load(stateDir string) (uuid.UUID, error) {
	path := filepath.Join(stateDir, FileName)
	b, err := os.ReadFile(path)
	if err != nil {
		return uuid.Nil, fmt.Errorf("read instance UID: %w", err)
	}
	id, err := uuid.Parse(strings.TrimSpace(string(b)))
	if err != nil {
		return uuid.Nil, fmt.Errorf("instance UID file %s is corrupt (remove it to get a new identity): %w", path, err)
	}
	return id, nil
}

// writeFileAtomic stages data next to path, fsyncs it and renames it into
// place, so a crash never leaves a half-written identity.
func writeFileAtomic(path string, data []byte) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err = f.Chmod(0o600); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return err
	}
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	if d, derr := os.Open(filepath.Dir(path)); derr == nil {
		_ = d.Sync() // best effort: make the rename durable
		d.Close()
	}
	return nil
}
