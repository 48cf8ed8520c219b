package server

import (
	"github.com/google/uuid"

	"github.com/myriarch/myriarch/internal/configrender"
	"github.com/myriarch/myriarch/server/configs"
	"github.com/myriarch/myriarch/server/hostcontext"
	"github.com/myriarch/myriarch/server/offers"
)

// hostLink gives a collector's render the providers its linked updater
// reports: the link comes from pairing (offers), the providers from the
// book of snapshots. An ambiguous or missing link gives none.
type hostLink struct {
	offers *offers.Engine
	book   *hostcontext.Book
}

var _ configs.HostContext = hostLink{}

func (h hostLink) For(collector uuid.UUID) (configrender.Input, bool) {
	upd, ok := h.offers.LinkedUpdater(collector)
	if !ok {
		return configrender.Input{}, false
	}
	return h.book.Context(upd)
}
