package storetest

import (
	"maps"
	"testing"

	"github.com/myriarch/myriarch/server/store"
)

func testConfigs(t *testing.T, h *handle) {
	a, b := [16]byte{1}, [16]byte{2}
	steps := []struct {
		batch      store.ConfigBatch
		wantAssign map[[16]byte]string
		wantBodies map[string]string
	}{
		{
			batch: store.ConfigBatch{
				Assignments: map[[16]byte][]byte{a: []byte(`{"assigned":"h1"}`), b: []byte(`{"assigned":"h1"}`)},
				Bodies:      map[string][]byte{"h1": []byte("receivers: {}\n")},
			},
			wantAssign: map[[16]byte]string{a: `{"assigned":"h1"}`, b: `{"assigned":"h1"}`},
			wantBodies: map[string]string{"h1": "receivers: {}\n"},
		},
		{
			// A body is stored once: adding it again keeps the first.
			batch: store.ConfigBatch{
				Assignments: map[[16]byte][]byte{b: []byte(`{"assigned":"h2"}`)},
				Bodies:      map[string][]byte{"h1": []byte("other"), "h2": []byte("b2")},
			},
			wantAssign: map[[16]byte]string{a: `{"assigned":"h1"}`, b: `{"assigned":"h2"}`},
			wantBodies: map[string]string{"h1": "receivers: {}\n", "h2": "b2"},
		},
		{
			batch:      store.ConfigBatch{DeleteBodies: []string{"h1", "missing"}},
			wantAssign: map[[16]byte]string{a: `{"assigned":"h1"}`, b: `{"assigned":"h2"}`},
			wantBodies: map[string]string{"h2": "b2"},
		},
		{batch: store.ConfigBatch{}, wantAssign: map[[16]byte]string{a: `{"assigned":"h1"}`, b: `{"assigned":"h2"}`}, wantBodies: map[string]string{"h2": "b2"}},
	}
	for i, st := range steps {
		must(t, h.db.WriteConfigs(ctx, st.batch))
		// Every step is checked after a restart.
		assign, bodies, err := h.restart().LoadConfigs(ctx)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		gotA := map[[16]byte]string{}
		for k, v := range assign {
			gotA[k] = string(v)
		}
		gotB := map[string]string{}
		for k, v := range bodies {
			gotB[k] = string(v)
		}
		if !maps.Equal(gotA, st.wantAssign) || !maps.Equal(gotB, st.wantBodies) {
			t.Errorf("step %d: assignments %v bodies %v, want %v %v", i, gotA, gotB, st.wantAssign, st.wantBodies)
		}
	}
}
