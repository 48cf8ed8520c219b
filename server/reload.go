package server

import (
	"context"
	"sync/atomic"

	"github.com/myriarch/myriarch/server/access"
	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/estate"
)

// loadEstate loads the estate directory (a variable for tests).
var loadEstate = estate.Load

// backgroundReload runs estate reloads off the goroutine that asks for
// them (the signal loop, the revision poll), so a long load never holds up
// a shutdown. Requests during a load are merged into one more load after it.
type backgroundReload struct {
	running, again atomic.Bool
}

// reloadInBackground starts a reload, or asks the running one to load
// once more when it ends; by names what asked (signal:SIGHUP,
// estate-poll) in the audit record of each load. A load still running at
// shutdown is not waited for: its result is not applied (see applyEstate).
func (s *Server) reloadInBackground(by string) {
	if !s.bg.running.CompareAndSwap(false, true) {
		s.bg.again.Store(true)
		return
	}
	go func() {
		for {
			if !s.closing.Load() {
				what, err := s.reloadEstate()
				outcome, detail := admin.OutcomeOK, what
				if err != nil {
					outcome, detail = admin.OutcomeError, what+": "+err.Error()
				}
				if err := s.admin.Record(context.Background(), admin.AuditEntry{Actor: by, Via: access.ViaEstate, Action: "estate.reload",
					Target: "estate", Outcome: outcome, Detail: detail}); err != nil {
					s.log.Error("estate reload not recorded in the audit trail", "by", by, "err", err)
				}
			}
			s.bg.running.Store(false)
			if !s.bg.again.Swap(false) || !s.bg.running.CompareAndSwap(false, true) {
				return
			}
		}
	}()
}
