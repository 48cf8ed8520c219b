package providers

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
)

// containerPorts is a container's ${docker.ports}: one object per port it
// exposes or publishes, sorted by port, protocol and host port. A port
// only exposed is {"port": 80, "protocol": "tcp"}; each binding of a
// published port adds "host_port" (8080), and "host_ip" when it is bound
// to one address only. A host port bound on every address (0.0.0.0 and ::)
// is one object without host_ip.
func containerPorts(c container.InspectResponse) []any {
	type entry struct {
		port     uint16
		protocol string
		hostPort int64  // 0: not published
		hostIP   string // "": every address
	}
	seen := map[entry]bool{}
	var list []entry
	add := func(e entry) {
		if !seen[e] {
			seen[e] = true
			list = append(list, e)
		}
	}
	published := map[network.Port]bool{}
	if c.NetworkSettings != nil {
		for p, bindings := range c.NetworkSettings.Ports {
			for _, b := range bindings {
				hp, err := strconv.ParseUint(b.HostPort, 10, 16)
				if err != nil || hp == 0 {
					continue
				}
				ip := ""
				if b.HostIP.IsValid() && !b.HostIP.IsUnspecified() {
					ip = b.HostIP.String()
				}
				add(entry{port: p.Num(), protocol: string(p.Proto()), hostPort: int64(hp), hostIP: ip})
				published[p] = true
			}
		}
	}
	exposed := []network.Port{}
	if c.Config != nil {
		for p := range c.Config.ExposedPorts {
			exposed = append(exposed, p)
		}
	}
	if c.NetworkSettings != nil {
		for p := range c.NetworkSettings.Ports {
			exposed = append(exposed, p)
		}
	}
	for _, p := range exposed {
		if !published[p] && p.Num() != 0 {
			add(entry{port: p.Num(), protocol: string(p.Proto())})
		}
	}
	slices.SortFunc(list, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.port, b.port), cmp.Compare(a.protocol, b.protocol),
			cmp.Compare(a.hostPort, b.hostPort), cmp.Compare(a.hostIP, b.hostIP))
	})
	out := make([]any, len(list))
	for i, e := range list {
		m := map[string]any{"port": int64(e.port), "protocol": e.protocol}
		if e.hostPort != 0 {
			m["host_port"] = e.hostPort
		}
		if e.hostIP != "" {
			m["host_ip"] = e.hostIP
		}
		out[i] = m
	}
	return out
}
