package binary

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/myriarch/myriarch/agent/journal"
)

// The Supervisor truncates agent.log at each collector start: a rollback
// that stops it just after a restart keeps, instead of the empty file, the
// tail the gate read when the last collector process ended.
func TestFailedLogSurvivesARestartJustBeforeTheStop(t *testing.T) {
	for _, tc := range []struct {
		name, onDisk, want string
	}{
		{"truncated by a restart", "", "panic: the last words\n"},
		{"written again", "fake collector 0.2.0 starting\n", "fake collector 0.2.0 starting\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			storage, state := t.TempDir(), t.TempDir()
			b, err := New(Options{Package: "collector", Root: t.TempDir(), StorageDir: storage, Executable: "otelcol"}, nopController{})
			if err != nil {
				t.Fatal(err)
			}
			b.env.StateDir = state
			log := filepath.Join(storage, "agent.log")
			os.WriteFile(log, []byte("panic: the last words\n"), 0o600)
			b.rememberCrashLog()
			os.WriteFile(log, []byte(tc.onDisk), 0o600) // the next start
			b.keepFailedLog(&journal.Record{Version: "0.2.0", Hash: "ab", Reason: "crash loop"})
			kept, err := os.ReadFile(filepath.Join(state, failedDir, "0.2.0", "agent.log"))
			if err != nil || string(kept) != tc.want {
				t.Fatalf("kept %q (%v), want %q", kept, err, tc.want)
			}
		})
	}
}

type nopController struct{}

func (nopController) Stop(context.Context) error  { return nil }
func (nopController) Start(context.Context) error { return nil }
func (nopController) PID() int                    { return 0 }
