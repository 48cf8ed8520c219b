package install

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadStatus(t *testing.T) {
	layout := Layout{Prefix: "mode-", Installed: "mode-installed.json"}
	const (
		journalDoc   = `{"id":"t1","kind":"collector","package":"otelcol-contrib","version":"0.150.0","step":"staged"}`
		markerDoc    = `{"from":"0.1.0","to":"0.1.1","hash":"11","executable":"/x","backup":"/y","applied":"2025-06-01T09:59:00Z"}`
		installedDoc = `{"version":"0.149.0","hash":"","ref":"otel/c:0.149.0","digest":"sha256:ab"}`
		statusesDoc  = `{"serverProvidedAllPackagesHash":"AQ==","packages":{"otelcol-contrib":{"name":"otelcol-contrib","status":"PackageStatusEnum_Installed"}}}`
	)
	tests := []struct {
		name  string
		files map[string]string
		check func(t *testing.T, st *Status)
		// wantErr lists the files an error must name ("" = no error).
		wantErr []string
	}{
		{name: "empty state dir", check: func(t *testing.T, st *Status) {
			if st.InProgress != nil || st.SelfUpdate != nil || st.Installed != nil || st.Statuses != nil {
				t.Errorf("status of an empty dir = %+v", st)
			}
		}},
		{name: "every file", files: map[string]string{
			JournalFile: journalDoc, SelfUpdateMarkerFile: markerDoc,
			layout.Installed: installedDoc, layout.StatusesFile(): statusesDoc,
		}, check: func(t *testing.T, st *Status) {
			if st.InProgress == nil || st.InProgress.Step != "staged" {
				t.Errorf("in progress = %+v", st.InProgress)
			}
			if st.SelfUpdate == nil || st.SelfUpdate.To != "0.1.1" {
				t.Errorf("self-update = %+v", st.SelfUpdate)
			}
			if in := st.Installed; in == nil || in.Version != "0.149.0" || in.Hash != "" || in.Ref != "otel/c:0.149.0" || in.Digest != "sha256:ab" {
				t.Errorf("installed = %+v", in)
			}
			if st.Statuses.GetPackages()["otelcol-contrib"] == nil || len(st.Statuses.GetServerProvidedAllPackagesHash()) != 1 {
				t.Errorf("statuses = %v", st.Statuses)
			}
		}},
		{name: "another mode's files are not read", files: map[string]string{
			"installed.json": installedDoc, StatusesFile: statusesDoc,
		}, check: func(t *testing.T, st *Status) {
			if st.Installed != nil || st.Statuses != nil {
				t.Errorf("read another layout's files: %+v", st)
			}
		}},
		{name: "only the journal", files: map[string]string{JournalFile: journalDoc}, check: func(t *testing.T, st *Status) {
			if st.InProgress == nil || st.SelfUpdate != nil || st.Installed != nil || st.Statuses != nil {
				t.Errorf("status = %+v", st)
			}
		}},
		{name: "corrupt files", files: map[string]string{
			JournalFile: "{nope", SelfUpdateMarkerFile: markerDoc,
			layout.Installed: "[", layout.StatusesFile(): "not json",
		}, wantErr: []string{JournalFile, layout.Installed, layout.StatusesFile()}, check: func(t *testing.T, st *Status) {
			if st.InProgress != nil || st.Installed != nil || st.Statuses != nil {
				t.Errorf("corrupt files gave values: %+v", st)
			}
			if st.SelfUpdate == nil {
				t.Error("the readable marker was not read next to corrupt files")
			}
		}},
		{name: "corrupt marker", files: map[string]string{SelfUpdateMarkerFile: "{"},
			wantErr: []string{filepath.FromSlash(SelfUpdateMarkerFile)}, check: func(t *testing.T, st *Status) {
				if st.SelfUpdate != nil {
					t.Errorf("self-update = %+v", st.SelfUpdate)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, body := range tt.files {
				p := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			st, err := ReadStatus(dir, layout)
			if st == nil {
				t.Fatalf("nil status (err %v)", err)
			}
			if len(tt.wantErr) == 0 && err != nil {
				t.Errorf("err = %v", err)
			}
			for _, name := range tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), name+" is corrupt") {
					t.Errorf("err = %v, want one naming %s as corrupt", err, name)
				}
			}
			tt.check(t, st)
		})
	}
}

func TestReadStatusCreatesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "absent")
	st, err := ReadStatus(dir, Layout{Installed: "installed.json"})
	if err != nil || st.InProgress != nil || st.Installed != nil {
		t.Fatalf("ReadStatus of a missing dir = %+v, %v", st, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("ReadStatus created %s (%v)", dir, err)
	}
}
