package updater

import (
	"bytes"
	"slices"
	"testing"

	"github.com/myriarch/myriarch/agent/config"
)

func TestCapabilityNames(t *testing.T) {
	want := []string{"ReportsStatus", "AcceptsPackages", "ReportsPackageStatuses", "ReportsHealth", "ReportsHeartbeat"}
	if got := CapabilityNames(Capabilities); !slices.Equal(got, want) {
		t.Errorf("CapabilityNames = %v, want %v", got, want)
	}
}

func TestDescribeWithoutSupervisorState(t *testing.T) {
	cfg := testConfig(t, "wss://user:pw@myriarch.example.com:4320/v1/opamp")
	d, err := Describe(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Problems) != 0 {
		t.Errorf("problems = %v", d.Problems)
	}
	if _, ok := d.NonIdentifying[AttrCollectorInstanceUID]; ok {
		t.Error("collector UID present while unknown")
	}
	if got := d.NonIdentifying[AttrServerEndpoint]; got != "wss://myriarch.example.com:4320/v1/opamp" {
		t.Errorf("endpoint attribute = %q (credentials must not leak)", got)
	}
	again, _ := Describe(cfg)
	if again.InstanceUID != d.InstanceUID || d.Identifying["service.instance.id"] != d.InstanceUID {
		t.Errorf("instance UID not stable: %s vs %s", d.InstanceUID, again.InstanceUID)
	}
}

func TestDescribeReportsMalformedState(t *testing.T) {
	cfg := testConfig(t, "ws://127.0.0.1:4320/v1/opamp")
	writeState(t, cfg.Supervisor.StorageDir, "instance_id: 42\n")
	d, err := Describe(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Problems) != 1 {
		t.Errorf("problems = %v", d.Problems)
	}
	cfg.Supervisor.Control = config.ControlProcess
	cfg.Supervisor.Command = []string{"/usr/local/bin/opampsupervisor", "--config", "x"}
	if d, _ := Describe(cfg); d.NonIdentifying[AttrSupervisorService] != "opampsupervisor" {
		t.Errorf("process control service = %q", d.NonIdentifying[AttrSupervisorService])
	}
}

func TestRefuseAllWithoutHash(t *testing.T) {
	st := RefuseAll(offer(), "nope")
	if ps := st.Packages["otelcol-contrib"]; ps.ErrorMessage != "nope" || !bytes.Equal(ps.ServerOfferedHash, []byte{9, 9}) {
		t.Errorf("%+v", st)
	}
	st = RefuseAll(nil, "nope")
	if st.ServerProvidedAllPackagesHash == nil || len(st.Packages) != 0 {
		t.Errorf("%+v", st)
	}
}
