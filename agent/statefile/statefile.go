// Package statefile reads and writes the small JSON documents the install
// engines keep under state_dir (what is installed, the quarantine, swap
// state). Writes are durable (journal.WriteFile: temp file, fsync, rename),
// so a crash leaves either the old or the new document, never a torn one.
package statefile

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/myriarch/myriarch/agent/journal"
)

// Read decodes the JSON document at path into v. It reports false with no
// error when the file does not exist; a file that is not valid JSON is an
// error naming the path.
func Read(path string, v any) (bool, error) {
	data, err := journal.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return false, fmt.Errorf("%s is corrupt: %w", path, err)
	}
	return true, nil
}

// Write replaces the document at path with v as indented JSON (mode 0600).
func Write(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	return journal.WriteFile(path, append(data, '\n'), 0o600)
}
