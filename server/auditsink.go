package server

import (
	"context"

	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/audit"
)

// appendAudit writes one entry of the admin API's guard, the console or
// an estate reload to the audit trail, before the response it accounts
// for is sent; an error holds that response back (503).
func (s *Server) appendAudit(ctx context.Context, e admin.AuditEntry) error {
	_, err := s.audit.Append(ctx, audit.Record{Actor: e.Actor, Role: e.Role, Via: e.Via, Action: e.Action,
		Target: e.Target, Source: e.Source, RequestID: e.RequestID, Outcome: e.Outcome, Detail: e.Detail})
	return err
}
