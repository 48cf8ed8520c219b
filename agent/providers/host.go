package providers

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"runtime"
	"strings"
	"time"

	"github.com/shirou/gopsutil/v4/host"
	psnet "github.com/shirou/gopsutil/v4/net"
)

// hostProvider publishes host facts and re-reads them every refresh,
// publishing only when they changed.
type hostProvider struct {
	refresh time.Duration
	log     *slog.Logger
	// noIP and noMAC leave the addresses out (providers.host.ip/mac: false).
	noIP, noMAC bool
}

var _ ContextProvider = (*hostProvider)(nil)

func (h *hostProvider) Name() string { return "host" }

func (h *hostProvider) Run(ctx context.Context, set func(map[string]any)) error {
	var last string
	for {
		data, err := hostData(ctx)
		if err != nil {
			return err
		}
		if h.noIP {
			delete(data, "ip")
		}
		if h.noMAC {
			delete(data, "mac")
		}
		if key := fmt.Sprint(data); key != last {
			if last != "" {
				h.log.Info("host: facts changed", "name", data["name"], "ip", data["ip"])
			}
			set(data)
			last = key
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(h.refresh):
		}
	}
}

// hostData reads name, platform, architecture, os_*, and the addresses of
// every non-loopback interface that is up.
func hostData(ctx context.Context) (map[string]any, error) {
	info, err := host.InfoWithContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("host: reading host info: %w", err)
	}
	ifaces, err := psnet.InterfacesWithContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("host: listing interfaces: %w", err)
	}
	ips, macs := []any{}, []any{}
	seenMAC := map[string]bool{}
	for _, ifc := range ifaces {
		if hasFlag(ifc.Flags, "loopback") || !hasFlag(ifc.Flags, "up") {
			continue
		}
		for _, a := range ifc.Addrs {
			p, err := netip.ParsePrefix(a.Addr)
			if err != nil {
				continue
			}
			ips = append(ips, p.Addr().String())
		}
		if mac := ifc.HardwareAddr; mac != "" && !seenMAC[mac] {
			seenMAC[mac] = true
			macs = append(macs, mac)
		}
	}
	return map[string]any{
		"name":         info.Hostname,
		"platform":     runtime.GOOS,
		"architecture": info.KernelArch,
		"os_family":    info.PlatformFamily,
		"os_platform":  info.Platform,
		"os_version":   info.PlatformVersion,
		"ip":           ips,
		"mac":          macs,
	}, nil
}

func hasFlag(flags []string, f string) bool {
	for _, x := range flags {
		if strings.EqualFold(x, f) {
			return true
		}
	}
	return false
}
