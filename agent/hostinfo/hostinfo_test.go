package hostinfo

import (
	"context"
	"os"
	"runtime"
	"testing"

	"github.com/shirou/gopsutil/v4/host"
)

func TestGet(t *testing.T) {
	info, err := Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	hn, _ := os.Hostname()
	if info.HostName != hn || info.Arch != runtime.GOARCH || info.OSType != runtime.GOOS || info.OSDescription == "" {
		t.Errorf("Get = %+v (hostname %q)", info, hn)
	}
}

func TestDescribe(t *testing.T) {
	for _, tt := range []struct {
		st   host.InfoStat
		want string
	}{
		{host.InfoStat{OS: "linux", Platform: "debian", PlatformVersion: "12.5", KernelVersion: "6.1.0"}, "debian 12.5 (linux 6.1.0)"},
		{host.InfoStat{OS: "linux", KernelVersion: "6.1.0"}, "linux 6.1.0"},
		{host.InfoStat{OS: "windows", Platform: "Microsoft Windows Server 2022", PlatformVersion: "10.0.20348"}, "Microsoft Windows Server 2022 10.0.20348"},
	} {
		if got := describe(&tt.st); got != tt.want {
			t.Errorf("describe(%+v) = %q, want %q", tt.st, got, tt.want)
		}
	}
}
