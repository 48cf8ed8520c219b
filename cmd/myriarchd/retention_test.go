package main

import (
	"bytes"
	"testing"
	"time"
)

// --audit-retention is read from its flag, its variable and the file's
// audit_retention, and keeps records forever by default.
func TestAuditRetentionSetting(t *testing.T) {
	file := writeConfig(t, "audit_retention: 2160h\n")
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want time.Duration
	}{
		{"default: forever", nil, nil, 0},
		{"file", []string{"--config", file}, nil, 90 * 24 * time.Hour},
		{"variable over file", []string{"--config", file}, map[string]string{"MYRIARCH_AUDIT_RETENTION": "720h"}, 30 * 24 * time.Hour},
		{"flag over variable", []string{"--audit-retention", "8760h"}, map[string]string{"MYRIARCH_AUDIT_RETENTION": "720h"}, 365 * 24 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			cfg, code, done := serveCommand(tt.args, envOf(tt.env), &out, &errb)
			if done {
				t.Fatalf("serve stopped with %d: %s", code, errb.String())
			}
			if cfg.AuditRetention != tt.want {
				t.Fatalf("audit retention %s, want %s", cfg.AuditRetention, tt.want)
			}
		})
	}
}
