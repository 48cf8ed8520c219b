package registry

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/server/store"
)

func descNamed(name string) *protobufs.AgentDescription {
	return &protobufs.AgentDescription{IdentifyingAttributes: []*protobufs.KeyValue{{Key: "service.name",
		Value: &protobufs.AnyValue{Value: &protobufs.AnyValue_StringValue{StringValue: name}}}}}
}

// A UID presented with another credential than the one it is bound to is
// refused with a ConflictError; the bound agent keeps every fact it had
// (credential, description, connection, last contact), the attempt is in
// its history once recorded, and observers are not told of a change.
func TestIdentityConflict(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	r, err := Load(context.Background(), &recordingStore{}, nil, slog.New(slog.DiscardHandler),
		Options{FlushInterval: time.Hour, SeenInterval: time.Hour, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var notified atomic.Int32
	r.Observe(func(uuid.UUID) { notified.Add(1) })

	uid := uuid.New()
	owner := store.Credential{Kind: "token", ID: "t-owner"}
	if _, err := r.Report(uid, owner, &protobufs.AgentToServer{AgentDescription: descNamed("otelcol"), Capabilities: 1}, false, true); err != nil {
		t.Fatal(err)
	}
	before, _ := r.Get(uid)
	notified.Store(0)
	now = now.Add(time.Minute)

	for _, tc := range []struct {
		name    string
		cred    store.Credential
		viaHTTP bool
	}{
		{"another token", store.Credential{Kind: "token", ID: "t-intruder"}, false},
		{"same id, another kind", store.Credential{Kind: "cert", ID: "t-owner"}, false},
		{"over plain HTTP", store.Credential{Kind: "token", ID: "t-intruder"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now = now.Add(conflictWindowLen) // each case is a credential's first conflict in its minute
			res, err := r.Report(uid, tc.cred, &protobufs.AgentToServer{SequenceNum: 1, AgentDescription: descNamed("impostor"), Capabilities: 7}, tc.viaHTTP, true)
			var ce *ConflictError
			if !errors.As(err, &ce) {
				t.Fatalf("Report = %v, want a *ConflictError", err)
			}
			if ce.UID != uid || ce.Presented != tc.cred {
				t.Errorf("ConflictError{UID: %s, Presented: %+v}, want %s and %+v", ce.UID, ce.Presented, uid, tc.cred)
			}
			if !strings.Contains(err.Error(), uid.String()) || !strings.Contains(err.Error(), tc.cred.ID) {
				t.Errorf("error %q does not name the instance and the credential", err)
			}
			if res != (ReportResult{}) {
				t.Errorf("result %+v, want the zero result", res)
			}
			if !r.RecordConflict(uid, tc.cred, "192.0.2.7:4000") {
				t.Error("the first conflict of a credential was not recorded")
			}
			after, _ := r.Get(uid)
			if after.Credential != owner || after.Identifying.Value("service.name") != "otelcol" || after.Capabilities != 1 ||
				!after.LastSeen.Equal(before.LastSeen) || after.Online != before.Online || after.Kind != before.Kind {
				t.Errorf("the bound agent changed:\nbefore %+v\nafter  %+v", before, after)
			}
			last := after.Events[len(after.Events)-1]
			if last.Type != EventIdentityConflict || !strings.Contains(last.Message, tc.cred.ID) || !strings.Contains(last.Message, tc.cred.Kind) ||
				!strings.Contains(last.Message, "192.0.2.7:4000") {
				t.Errorf("last event %+v, want %s naming %s %q and the address", last, EventIdentityConflict, tc.cred.Kind, tc.cred.ID)
			}
			if n := notified.Load(); n != 0 {
				t.Errorf("observers notified %d times of a refused report", n)
			}
			if got := r.UIDsByCredential(tc.cred); len(got) != 0 {
				t.Errorf("the presented credential is bound to %v", got)
			}
		})
	}

	// The rightful owner still reports.
	if _, err := r.Report(uid, owner, &protobufs.AgentToServer{SequenceNum: 1}, false, false); err != nil {
		t.Fatalf("owner after conflicts: %v", err)
	}
	if a, _ := r.Get(uid); !a.LastSeen.Equal(now) {
		t.Errorf("owner's report not recorded: lastSeen %s, want %s", a.LastSeen, now)
	}
}
