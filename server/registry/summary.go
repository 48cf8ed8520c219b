package registry

// HostKey is the attribute-view key of an agent's host name.
const HostKey = "host.name"

// Count is a number of agents and how many of them are online.
type Count struct {
	Total  int `json:"total"`
	Online int `json:"online"`
}

// Summary counts agents by kind and collectors by reported service.version.
type Summary struct {
	ByKind map[Kind]Count
	// CollectorVersions is keyed by service.version ("" when not reported).
	CollectorVersions map[string]Count
}

// Summarize counts every agent in one pass under the read lock, without
// copying any (an overview of 100 000 agents allocates only the maps).
func (r *Registry) Summarize() Summary {
	s := Summary{ByKind: map[Kind]Count{}, CollectorVersions: map[string]Count{}}
	r.mu.RLock()
	defer r.mu.RUnlock()
	now := r.opts.Now()
	for _, a := range r.agents {
		on := 0
		if a.online(now, r.opts.HTTPOnlineWindow) {
			on = 1
		}
		c := s.ByKind[a.kind.Kind()]
		c.Total++
		c.Online += on
		s.ByKind[a.kind.Kind()] = c
		if a.kind.Kind() == KindCollector {
			v := a.desc.Identifying().Value("service.version")
			c := s.CollectorVersions[v]
			c.Total++
			c.Online += on
			s.CollectorVersions[v] = c
		}
	}
	return s
}

// Len is the number of registered agents.
func (r *Registry) Len() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.agents)
}
