package offers

import (
	"encoding/json"
	"runtime"
	"sync"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/server/pairing"
	"github.com/myriarch/myriarch/server/registry"
)

// facts is what the engine reads from one registry snapshot.
type facts struct {
	pairing pairing.Agent
	version string   // a collector's service.version
	updater *updater // for updaters
	stored  *persisted
}

// factsOf reads an agent's facts; it only reads the snapshot, so start-up
// runs it for many agents at once.
func factsOf(a registry.Agent) facts {
	f := facts{pairing: pairing.Agent{UID: a.UID, Cred: a.Credential, Host: a.Attributes.Value("host.name"), Online: a.Online, LastSeen: a.LastSeen}}
	switch a.Kind {
	case registry.KindCollector:
		f.pairing.Role = pairing.Collector
		f.version = a.Identifying.Value("service.version")
	case registry.KindUpdater:
		f.pairing.Role = pairing.Updater
		if claim, err := uuid.Parse(a.NonIdentifying.Value("dev.myriarch.collector.instance_uid")); err == nil {
			f.pairing.Claim, f.pairing.HasClaim = claim, true
		}
		f.updater = &updater{uid: a.UID, online: a.Online,
			accepts: a.HasCapability(protobufs.AgentCapabilities_AgentCapabilities_AcceptsPackages),
			mode:    a.NonIdentifying.Value("dev.myriarch.install.mode"), view: a.Attributes}
	}
	return f
}

// loadLocked records the agents of a registry loaded from the store into the
// empty engine, with the offer state stored for them; caller holds e.mu.
// Reading the snapshots and decoding the stored state is split among
// GOMAXPROCS goroutines; the pairing index is built in one pass, and its
// changes raise no events: the pairings are rebuilt from the store, not new.
func (e *Engine) loadLocked(agents []registry.Agent, stored map[[16]byte][]byte) {
	all := make([]facts, len(agents))
	workers := min(runtime.GOMAXPROCS(0), (len(agents)+999)/1000)
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := w*len(agents)/workers, (w+1)*len(agents)/workers
		wg.Go(func() {
			for i := lo; i < hi; i++ {
				a := &agents[i]
				all[i] = factsOf(*a)
				if data := stored[a.UID]; a.Kind == registry.KindCollector && len(data) > 0 {
					var p persisted
					if json.Unmarshal(data, &p) == nil {
						all[i].stored = &p
					}
				}
			}
		})
	}
	wg.Wait()
	var nc, nu int
	for i := range agents {
		switch agents[i].Kind {
		case registry.KindCollector:
			nc++
		case registry.KindUpdater:
			nu++
		}
	}
	if len(e.collectors) == 0 && len(e.updaters) == 0 {
		e.collectors, e.updaters = make(map[uuid.UUID]*collector, nc), make(map[uuid.UUID]*updater, nu)
	}
	pas := make([]pairing.Agent, len(agents))
	for i, a := range agents {
		f := &all[i]
		pas[i] = f.pairing
		switch a.Kind {
		case registry.KindCollector:
			c := e.collectorRecLocked(a.UID)
			c.view, c.version, c.online = a.Attributes, f.version, a.Online
			if p := f.stored; p != nil {
				e.restoreLocked(c, p)
			}
		case registry.KindUpdater:
			e.updaters[a.UID] = f.updater
		}
	}
	e.ix.Load(pas)
}
