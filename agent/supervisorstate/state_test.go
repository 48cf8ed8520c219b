package supervisorstate

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestReadFixture(t *testing.T) {
	st, err := Read("testdata/storage")
	if err != nil {
		t.Fatal(err)
	}
	if st.InstanceID != "01a23624-fe71-761b-9dc4-b4d1fba94a8f" {
		t.Errorf("InstanceID = %q", st.InstanceID)
	}
	if st.LastRemoteConfigStatus == nil || st.LastRemoteConfigStatus.Status != 2 {
		t.Errorf("LastRemoteConfigStatus = %+v", st.LastRemoteConfigStatus)
	}
}

func TestReadProblems(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    string
	}{
		{"null status", "instance_id: 01a23624-fe71-761b-9dc4-b4d1fba94a8f\nlast_remote_config_status: null\n", ""},
		{"not yaml", "instance_id: [\n", "is malformed"},
		{"no instance id", "last_remote_config_status: null\n", "has no instance_id"},
		{"empty file", "", "has no instance_id"},
		{"not a uuid", "instance_id: banana\n", `instance_id "banana" is not a UUID`},
		{"wrong shape", "- a\n- b\n", "is malformed"},
		{"too large", "instance_id: 01a23624-fe71-761b-9dc4-b4d1fba94a8f\n#" + strings.Repeat("x", maxFileSize), "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(Path(dir), []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Read(dir)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), dir) {
				t.Fatalf("err = %v, want it to contain %q and the path", err, tt.want)
			}
		})
	}
}

func TestReadMissingAndUnreadable(t *testing.T) {
	dir := t.TempDir()
	if _, err := Read(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: err = %v, want fs.ErrNotExist", err)
	}
	// A directory in place of the file is unreadable even for root.
	if err := os.Mkdir(Path(dir), 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := Read(dir)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("unreadable file: err = %v", err)
	}
}

type observation struct {
	id  string
	err error
}

// writeAtomic replaces the file the way the supervisor does: write a temp
// file, then rename it over the old one.
func writeAtomic(t *testing.T, dir, content string) {
	t.Helper()
	tmp := filepath.Join(dir, ".persistent_state.yaml.tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, Path(dir)); err != nil {
		t.Fatal(err)
	}
}

func next(t *testing.T, ch <-chan observation) observation {
	t.Helper()
	select {
	case o := <-ch:
		return o
	case <-time.After(30 * time.Second):
		t.Fatal("no change observed")
		return observation{}
	}
}

func TestWatchFollowsAtomicRewrites(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "storage") // does not exist yet
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan observation, 16)
	done := make(chan struct{})
	go func() {
		Watch(ctx, dir, 10*time.Millisecond, func(s State, err error) { ch <- observation{s.InstanceID, err} })
		close(done)
	}()
	defer func() { cancel(); <-done }()

	if o := next(t, ch); !errors.Is(o.err, fs.ErrNotExist) {
		t.Fatalf("initial = %+v, want not-exist", o)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	const id1, id2 = "01a23624-fe71-761b-9dc4-b4d1fba94a8f", "0192f6a0-7b7c-7cc4-8a4e-4bd5a3d26a11"
	writeAtomic(t, dir, "instance_id: "+id1+"\nlast_remote_config_status: null\n")
	if o := next(t, ch); o.err != nil || o.id != id1 {
		t.Fatalf("after create = %+v", o)
	}
	writeAtomic(t, dir, "instance_id: "+id2+"\nlast_remote_config_status: null\n")
	if o := next(t, ch); o.err != nil || o.id != id2 {
		t.Fatalf("after rewrite = %+v", o)
	}
	writeAtomic(t, dir, "instance_id: {{{\n")
	if o := next(t, ch); o.err == nil || !strings.Contains(o.err.Error(), "malformed") {
		t.Fatalf("after corrupting = %+v", o)
	}
	writeAtomic(t, dir, "instance_id: "+id1+"\n")
	if o := next(t, ch); o.err != nil || o.id != id1 {
		t.Fatalf("after repair = %+v", o)
	}
}
