// Package hostinfo collects the host attributes every OpAMP agent on the host
// reports (host.name, host.arch, os.type, os.description), using the same
// conventions as the upstream supervisor so server-side pairing by host name
// matches.
package hostinfo

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/shirou/gopsutil/v4/host"
)

// Info holds the host attributes.
type Info struct {
	HostName      string // host.name
	Arch          string // host.arch, GOARCH naming as the supervisor uses
	OSType        string // os.type, GOOS naming
	OSDescription string // os.description, e.g. "debian 12.5 (linux 6.1.0-18-amd64)"
}

// Get reads the host information. A failure to read the OS details still
// yields the parts that are known (host name, arch, OS type) and the error.
func Get(ctx context.Context) (Info, error) {
	info := Info{Arch: runtime.GOARCH, OSType: runtime.GOOS}
	st, err := host.InfoWithContext(ctx)
	if st != nil {
		info.HostName = st.Hostname
		info.OSDescription = describe(st)
	}
	if info.HostName == "" {
		info.HostName, _ = os.Hostname()
	}
	if info.OSDescription == "" {
		info.OSDescription = runtime.GOOS
	}
	if err != nil {
		return info, fmt.Errorf("host info: %w", err)
	}
	return info, nil
}

func describe(st *host.InfoStat) string {
	d := strings.TrimSpace(st.Platform + " " + st.PlatformVersion)
	if st.KernelVersion != "" {
		if d == "" {
			return strings.TrimSpace(st.OS + " " + st.KernelVersion)
		}
		return fmt.Sprintf("%s (%s %s)", d, st.OS, st.KernelVersion)
	}
	return d
}
