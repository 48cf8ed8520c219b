package server

import (
	"sync/atomic"

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
// once more when it ends. A load still running at shutdown is not waited
// for: its result is not applied (see applyEstate).
func (s *Server) reloadInBackground() {
	if !s.bg.running.CompareAndSwap(false, true) {
		s.bg.again.Store(true)
		return
	}
	go func() {
		for {
			if !s.closing.Load() {
				_ = s.ReloadEstate()
			}
			s.bg.running.Store(false)
			if !s.bg.again.Swap(false) || !s.bg.running.CompareAndSwap(false, true) {
				return
			}
		}
	}()
}
