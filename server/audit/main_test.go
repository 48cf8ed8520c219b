package audit_test

import (
	"os"
	"testing"

	"github.com/myriarch/myriarch/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.MainWithPostgres(m)) }
