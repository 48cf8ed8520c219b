package sitesetup

import (
	"os"
	"testing"

	"github.com/myriarch/myriarch/internal/testkit"
)

func TestMain(m *testing.M) { os.Exit(testkit.RunChecked(m.Run)) }
