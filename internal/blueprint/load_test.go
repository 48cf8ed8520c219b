package blueprint

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadErrors loads one estate per load error in testdata/load and
// compares every reported error with want.txt.
func TestLoadErrors(t *testing.T) {
	for _, name := range caseDirs(t, "load") {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("testdata", "load", name)
			est, err := Load(caseRoots(t, dir)...)
			if est != nil {
				t.Fatalf("load succeeded, want it to fail closed with no estate")
			}
			var les LoadErrors
			if !errors.As(err, &les) || len(les) == 0 {
				t.Fatalf("err = %v, want LoadErrors", err)
			}
			var b strings.Builder
			for _, e := range les {
				if e.File == "" {
					t.Errorf("error without a file: %v", e)
				}
				fmt.Fprintln(&b, e.Error())
			}
			golden(t, filepath.Join(dir, "want.txt"), []byte(relativise(b.String(), dir)))
		})
	}
}
