package pkgstatus

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/open-telemetry/opamp-go/protobufs"
	"google.golang.org/protobuf/proto"
)

func TestNames(t *testing.T) {
	offer := &protobufs.PackagesAvailable{Packages: map[string]*protobufs.PackageAvailable{"c": {}, "a": {}, "b": {}}}
	if got := Names(offer); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("got %v", got)
	}
	if got := Names(nil); len(got) != 0 {
		t.Errorf("nil offer: %v", got)
	}
}

func TestSnapshotIsACopy(t *testing.T) {
	st := map[string]*protobufs.PackageStatus{"c": {Name: "c", AgentHasVersion: "1.0.0"}}
	s := Snapshot(st, nil)
	if s.ServerProvidedAllPackagesHash == nil || len(s.ServerProvidedAllPackagesHash) != 0 {
		t.Errorf("nil all-packages hash must be sent empty, got %v", s.ServerProvidedAllPackagesHash)
	}
	st["c"].AgentHasVersion = "2.0.0"
	if s.Packages["c"].AgentHasVersion != "1.0.0" {
		t.Error("snapshot shares the status with the engine")
	}
	h := []byte{1, 2}
	s = Snapshot(st, h)
	h[0] = 9
	if !bytes.Equal(s.ServerProvidedAllPackagesHash, []byte{1, 2}) {
		t.Error("snapshot shares the hash with the engine")
	}
}

func TestPublishAndLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "statuses.json")
	var logs strings.Builder
	log := slog.New(slog.NewTextHandler(&logs, nil))
	s := Snapshot(map[string]*protobufs.PackageStatus{"c": {Name: "c", Status: protobufs.PackageStatusEnum_PackageStatusEnum_Installed}}, []byte{7})

	var sent []*protobufs.PackageStatuses
	send := func(s *protobufs.PackageStatuses) error { sent = append(sent, s); return nil }
	Publish(log, s, send, path, false)
	if got, err := Load(path); got != nil || err != nil {
		t.Fatalf("not persisted, yet loaded %v %v", got, err)
	}
	Publish(log, s, func(*protobufs.PackageStatuses) error { return errors.New("server gone") }, path, true)
	if len(sent) != 1 || !strings.Contains(logs.String(), "reporting package statuses failed") {
		t.Errorf("sent %d, logs %q", len(sent), logs.String())
	}
	got, err := Load(path)
	if err != nil || !proto.Equal(got, s) {
		t.Errorf("loaded %v %v, want %v", got, err, s)
	}

	Publish(log, s, send, filepath.Join(path, "not-a-dir", "x"), true)
	if !strings.Contains(logs.String(), "persisting package statuses failed") {
		t.Errorf("persist failure not logged: %q", logs.String())
	}
}

func TestLoadCorrupt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "statuses.json")
	if err := os.WriteFile(path, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Path != path || !strings.HasPrefix(err.Error(), path+" is corrupt: ") {
		t.Errorf("got %v", err)
	}
}

func TestOfferedHash(t *testing.T) {
	content, offer := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	for _, tc := range []struct {
		name string
		p    *protobufs.PackageAvailable
		want []byte
	}{
		{"offer hash", &protobufs.PackageAvailable{Hash: offer, File: &protobufs.DownloadableFile{ContentHash: content}}, offer},
		{"no offer hash: content hash", &protobufs.PackageAvailable{File: &protobufs.DownloadableFile{ContentHash: content}}, content},
		{"neither", &protobufs.PackageAvailable{}, nil},
		{"nil", nil, nil},
	} {
		if got := OfferedHash(tc.p); !bytes.Equal(got, tc.want) {
			t.Errorf("%s: %x, want %x", tc.name, got, tc.want)
		}
	}
}
