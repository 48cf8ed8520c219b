package store

import (
	"errors"
	"testing"
)

// rows is a result set in memory: each row's column values in order.
type rows struct {
	data [][]any
	i    int
}

func (r *rows) Next() bool { r.i++; return r.i <= len(r.data) }
func (r *rows) Err() error { return nil }
func (r *rows) Scan(dest ...any) error {
	row := r.data[r.i-1]
	if len(row) != len(dest) {
		return errors.New("column count")
	}
	for i, d := range dest {
		switch p := d.(type) {
		case *[]byte:
			*p = row[i].([]byte)
		default:
			return errors.New("unexpected destination")
		}
	}
	return nil
}

// Rows whose instance UID is not 16 bytes are skipped, whatever their
// length: stored by something else, they are not an agent's.
func TestScanMapSkipsMalformedUIDs(t *testing.T) {
	good := make([]byte, 16)
	good[15] = 7
	r := &rows{data: [][]any{
		{[]byte{}, []byte("empty")},
		{[]byte{1, 2, 3}, []byte("short")},
		{make([]byte, 17), []byte("long")},
		{good, []byte("kept")},
	}}
	got, err := ScanMap(r, UIDKey)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || string(got[[16]byte(good)]) != "kept" {
		t.Fatalf("read %v, want only the 16-byte UID's row", got)
	}
}
