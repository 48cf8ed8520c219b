package audit_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/myriarch/myriarch/internal/testenv"
)

func TestMain(m *testing.M) {
	code := testenv.RunWithPostgres(m)
	if code == 0 {
		if err := goleak.Find(goleak.IgnoreTopFunction("github.com/jackc/pgx/v5/pgxpool.(*Pool).backgroundHealthCheck")); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines left running:", err)
			code = 1
		}
	}
	os.Exit(code)
}
