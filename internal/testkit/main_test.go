package testkit

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) { os.Exit(RunChecked(m.Run)) }
