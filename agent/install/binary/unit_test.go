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
