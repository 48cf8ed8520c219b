package audit

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/myriarch/myriarch/server/access"
	"github.com/myriarch/myriarch/server/store"
)

// CutChunk is the most records one cut removes: a cut holds the trail's
// write lock, and appends wait for it meanwhile.
const CutChunk = 10000

// CutActor is the actor of a cut's record: the server, acting on its own
// settings (the retention), as it does for an estate reloaded by signal or
// poll — hence via estate.
const CutActor = "myriarchd"

// Cuts is what Cut did: how many cuts (each with its record) and how many
// records they removed in all, up to which id.
type Cuts struct {
	Cuts    int
	Records int64
	UpTo    int64
}

// Cut removes the trail's oldest records older than before: a prefix,
// from the oldest record up to the first one at or after before, in cuts
// of at most 10 000 records, each recorded by an audit.cut record (see
// the package documentation). Nothing older is nothing cut and nothing
// recorded.
func (t *Trail) Cut(ctx context.Context, before time.Time) (Cuts, error) {
	var done Cuts
	for {
		c, err := t.store.CutAudit(ctx, before, t.cutChunk, t.cutSealer)
		if err != nil {
			return done, fmt.Errorf("audit trail: %w", err)
		}
		if c.Records == 0 {
			return done, nil
		}
		done.Cuts++
		done.Records += c.Records
		done.UpTo = c.UpTo
		t.log.Info("audit trail cut", "records", c.Records, "up_to", c.UpTo, "before", before)
		if c.Records < int64(t.cutChunk) {
			return done, nil
		}
	}
}

// cutSealer seals the record of cut c.
func (t *Trail) cutSealer(c store.AuditCut) store.AuditSeal {
	return t.sealer(Record{Actor: CutActor, Via: access.ViaEstate, Action: ActionCut, Target: "audit", Outcome: OutcomeOK,
		Detail: cutDetail(c)})
}

// cutDetail is what a cut's record says of it.
func cutDetail(c store.AuditCut) string {
	return fmt.Sprintf("cut %d records up to id %d; last cut hash %s", c.Records, c.UpTo, c.Hash)
}

var cutDetailRE = regexp.MustCompile(`^cut ([0-9]+) records up to id ([0-9]+); last cut hash ([0-9a-f]{64})$`)

// parseCutDetail reads what cutDetail wrote.
func parseCutDetail(s string) (store.AuditCut, bool) {
	m := cutDetailRE.FindStringSubmatch(s)
	if m == nil {
		return store.AuditCut{}, false
	}
	n, err1 := strconv.ParseInt(m[1], 10, 64)
	upTo, err2 := strconv.ParseInt(m[2], 10, 64)
	if err1 != nil || err2 != nil {
		return store.AuditCut{}, false
	}
	return store.AuditCut{Records: n, UpTo: upTo, Hash: m[3]}, true
}
