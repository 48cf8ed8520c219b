package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestGCPercent(t *testing.T) {
	for _, tt := range []struct {
		name      string
		env       map[string]string
		want      string
		byDefault bool
		err       string
	}{
		{"GOGC unset: the default", nil, "75", true, ""},
		{"GOGC set: the operator's", map[string]string{"GOGC": "200"}, "200", false, ""},
		{"GOGC=off is the operator's too", map[string]string{"GOGC": "off"}, "off", false, ""},
		{"a GOGC the runtime cannot read leaves 100, named", map[string]string{"GOGC": "75%"}, "100", false, `GOGC="75%" is neither a percentage nor off`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			got, byDefault, err := gcPercent(getenv)
			if got != tt.want || byDefault != tt.byDefault {
				t.Errorf("gcPercent = %q, %v; want %q, %v", got, byDefault, tt.want, tt.byDefault)
			}
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("gcPercent error %v, want %q", err, tt.err)
			}
		})
	}
}

func TestApplyGCPercent(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	applyGCPercent(func(string) (string, bool) { return "100", true })
	if p := debug.SetGCPercent(100); p != 100 {
		t.Errorf("with GOGC set the collector's target became %d, want it left at 100", p)
	}
	applyGCPercent(func(string) (string, bool) { return "", false })
	if p := debug.SetGCPercent(100); p != defaultGCPercent {
		t.Errorf("with GOGC unset the collector's target is %d, want %d", p, defaultGCPercent)
	}
}
