package configs

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/myriarch/myriarch/internal/configrender"
)

// recordFormat is the first byte of a stored record. A stored record is
// read at every start, 100 000 of them in a large estate, so it is a
// compact binary form rather than JSON: the version byte, then every
// string field as a uvarint length and its bytes in persistedFields order,
// then the number of failed hashes and each of them, then (since format 2)
// the wave and the report time (Unix ns) as uvarints, then (since format
// 3) the number of warnings and each as its five strings.
const recordFormat = 3

// maxWarnings bounds the warnings a stored record may hold.
const maxWarnings = 1 << 12

func (p *persisted) strings(format byte) []*string {
	s := []*string{&p.Fleet, &p.Blueprint, &p.Input, &p.Revision, &p.Assigned, &p.Desired, &p.Applied,
		&p.Reported.Hash, &p.Reported.Status, &p.Reported.Error, &p.Effective, &p.Error}
	if format >= 2 {
		s = append(s, &p.Source)
	}
	if format >= 3 {
		s = append(s, &p.FailedWhy)
	}
	return s
}

func warningStrings(w *configrender.Warning) []*string {
	return []*string{&w.Kind, &w.Component, &w.Variable, &w.Source, &w.Reason}
}

func (p persisted) marshal() []byte {
	b := make([]byte, 0, 512)
	b = append(b, recordFormat)
	for _, s := range p.strings(recordFormat) {
		b = binary.AppendUvarint(b, uint64(len(*s)))
		b = append(b, *s...)
	}
	b = binary.AppendUvarint(b, uint64(len(p.Failed)))
	for _, s := range p.Failed {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = binary.AppendUvarint(b, uint64(p.Wave))
	b = binary.AppendUvarint(b, uint64(max(p.ReportAt, 0)))
	b = binary.AppendUvarint(b, uint64(len(p.Warnings)))
	for i := range p.Warnings {
		for _, s := range warningStrings(&p.Warnings[i]) {
			b = binary.AppendUvarint(b, uint64(len(*s)))
			b = append(b, *s...)
		}
	}
	return b
}

var errTruncated = errors.New("truncated record")

// unmarshal reads a stored record; str makes the strings (sharing equal
// ones). Records written as JSON are read too.
func (p *persisted) unmarshal(data []byte, str func([]byte) string) error {
	if len(data) > 0 && data[0] == '{' {
		return json.Unmarshal(data, p)
	}
	if len(data) == 0 || data[0] < 1 || data[0] > recordFormat {
		return fmt.Errorf("unknown record format %d", firstByte(data))
	}
	format := data[0]
	data = data[1:]
	next := func() (string, error) {
		n, k := binary.Uvarint(data)
		if k <= 0 || uint64(len(data)-k) < n {
			return "", errTruncated
		}
		s := str(data[k : k+int(n)])
		data = data[k+int(n):]
		return s, nil
	}
	var err error
	for _, s := range p.strings(format) {
		if *s, err = next(); err != nil {
			return err
		}
	}
	n, k := binary.Uvarint(data)
	if k <= 0 || n > maxFailed {
		return errTruncated
	}
	data = data[k:]
	p.Failed = nil
	for range n {
		s, err := next()
		if err != nil {
			return err
		}
		p.Failed = append(p.Failed, s)
	}
	if format >= 2 {
		var nums [2]uint64
		for i := range nums {
			n, k := binary.Uvarint(data)
			if k <= 0 {
				return errTruncated
			}
			nums[i], data = n, data[k:]
		}
		p.Wave, p.ReportAt = int(min(nums[0], 1<<20)), int64(min(nums[1], 1<<62))
	}
	if format >= 3 {
		n, k := binary.Uvarint(data)
		if k <= 0 || n > maxWarnings {
			return errTruncated
		}
		data = data[k:]
		p.Warnings = nil
		for range n {
			var w configrender.Warning
			for _, s := range warningStrings(&w) {
				if *s, err = next(); err != nil {
					return err
				}
			}
			p.Warnings = append(p.Warnings, w)
		}
	}
	if len(data) != 0 {
		return fmt.Errorf("%d bytes after the record", len(data))
	}
	return nil
}

func firstByte(b []byte) int {
	if len(b) == 0 {
		return -1
	}
	return int(b[0])
}
