package binary

import (
	"strings"
	"testing"

	"github.com/myriarch/myriarch/agent/install"
)

func TestOptionsValidate(t *testing.T) {
	err := Options{Package: install.SelfPackage, Root: "rel", Executable: "a/b", HealthcheckURL: "http://10.0.0.1:13133/"}.Validate()
	if err == nil {
		t.Fatal("want errors")
	}
	for _, want := range []string{"collector.package", "collector.root: must be an absolute path",
		"supervisor.storage_dir: required", "collector.executable", "must be loopback"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in %v", want, err)
		}
	}
}

// A process is its PID and its start time: a PID given again to a new
// process (a restarted collector on Windows) is another process.
func TestProcIDSame(t *testing.T) {
	for _, tc := range []struct {
		a, b procID
		want bool
	}{
		{procID{10, 1000}, procID{10, 1000}, true},
		{procID{10, 1000}, procID{10, 1450}, false},
		{procID{10, 1000}, procID{11, 1000}, false},
		{procID{10, 0}, procID{10, 1000}, true},
		{procID{10, 1000}, procID{10, 0}, true},
		{procID{}, procID{10, 0}, false},
	} {
		if got := tc.a.same(tc.b); got != tc.want {
			t.Errorf("%v.same(%v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
