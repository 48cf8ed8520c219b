package sqlite

import (
	"context"
	"testing"

	"github.com/myriarch/myriarch/server/store"
	"github.com/myriarch/myriarch/server/store/storetest"
)

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) func(t *testing.T) store.Store {
		dir := t.TempDir()
		return func(t *testing.T) store.Store {
			db, err := Open(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			return db
		}
	})
}
