package server

import (
	"net/http"
	"os"
	"time"

	"github.com/myriarch/myriarch/internal/buildinfo"
	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/backup"
	"github.com/myriarch/myriarch/server/store"
)

// backup is POST /api/v1/backup: a consistent snapshot of the store while
// the server runs, streamed as a backup archive (server/backup). The
// snapshot is staged in the data directory and removed afterwards.
func (s *Server) backup(w http.ResponseWriter, r *http.Request) {
	snap, ok := s.opened.(store.Snapshotter)
	if !ok {
		admin.WriteError(w, http.StatusNotImplemented, "this store cannot be backed up while in use")
		return
	}
	dir, err := os.MkdirTemp(s.opts.DataDir, "backup-")
	if err != nil {
		admin.WriteError(w, http.StatusInternalServerError, "backup: "+err.Error())
		return
	}
	defer os.RemoveAll(dir)
	started := time.Now()
	info, err := snap.Snapshot(r.Context(), dir)
	if err != nil {
		admin.WriteError(w, http.StatusInternalServerError, "backup: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/gzip")
	w.Header().Set("Content-Disposition", `attachment; filename="myriarchd-backup.tar.gz"`)
	m := backup.Manifest{Created: started.UTC(), Server: buildinfo.Version, EstateRevision: s.estateRevision(), SnapshotInfo: info}
	if err := backup.Write(w, dir, m); err != nil {
		// The answer has begun: the archive ends short and the client's
		// check of it fails.
		s.log.Error("backup: writing the archive", "err", err)
		return
	}
	s.log.Info("backup taken", "backend", info.Backend, "schema", info.SchemaVersion, "files", len(info.Files), "took", time.Since(started).Round(time.Millisecond))
}
