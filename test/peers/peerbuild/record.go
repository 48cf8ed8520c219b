package peerbuild

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// clearOutputs removes everything a build produced in dir, so that a
// rebuild after a damaged cache does not reuse damaged files. The lock file
// (held by the caller) and the build log stay.
func clearOutputs(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("read peers cache %s: %w", dir, err)
	}
	for _, e := range entries {
		if e.Name() == "lock" || e.Name() == "build.log" {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("clear damaged peers cache: %w", err)
		}
	}
	return nil
}

const recordName = "peers.json"

// loadRecord reads the record a finished build wrote and checks that the
// files it names are still there and unchanged.
func loadRecord(dir string) (*Peers, error) {
	data, err := os.ReadFile(filepath.Join(dir, recordName))
	if err != nil {
		return nil, err
	}
	var p Peers
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("parse %s: %w", recordName, err)
	}
	if p.Dir != dir {
		return nil, fmt.Errorf("%s describes %s, not %s", recordName, p.Dir, dir)
	}
	if _, err := os.Stat(p.Supervisor); err != nil {
		return nil, fmt.Errorf("supervisor executable: %w", err)
	}
	specs := collectorSpecs()
	if len(p.Collectors) != len(specs) {
		return nil, fmt.Errorf("%s lists %d collectors, want %d", recordName, len(p.Collectors), len(specs))
	}
	for i, c := range p.Collectors {
		if c.Version != specs[i].Version || c.Broken != specs[i].Broken {
			return nil, fmt.Errorf("%s: collector %d is %s, want %s", recordName, i, c.Version, specs[i].Version)
		}
		for _, f := range []struct{ path, want string }{{c.Executable, c.ExecutableSHA256}, {c.Archive, c.ArchiveSHA256}} {
			got, _, err := fileSHA256(f.path)
			if err != nil {
				return nil, err
			}
			if got != f.want {
				return nil, fmt.Errorf("%s changed since it was built (sha256 %s, recorded %s)", f.path, got, f.want)
			}
		}
	}
	return &p, nil
}

func writeRecord(dir string, p *Peers) error {
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, recordName+".tmp")
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write peers record: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, recordName)); err != nil {
		return fmt.Errorf("install peers record: %w", err)
	}
	return nil
}
