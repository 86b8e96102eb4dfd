package topics

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Family is a market family. Every slot has at most one market of each.
type Family string

// The two market families (docs/markets.md).
const (
	// WholeBlock markets sell the whole block of a slot; quantity is always 1.
	WholeBlock Family = "wholeblock"
	// InclusionPreconf markets sell gas units of inclusion preconfirmations.
	InclusionPreconf Family = "inclusion-preconf"
)

// Valid reports whether f is one of the two families.
func (f Family) Valid() bool { return f == WholeBlock || f == InclusionPreconf }

// instrumentPrefix and marketIDBase follow docs/api.md "Values and
// identifiers".
func (f Family) instrumentPrefix() string {
	if f == WholeBlock {
		return "ETH-WB-"
	}
	return "ETH-PC-"
}

func (f Family) marketIDBase() int64 {
	if f == WholeBlock {
		return 2_000_000_000_000
	}
	return 1_000_000_000_000
}

// InstrumentID returns ETH-WB-<slot> or ETH-PC-<slot>.
func InstrumentID(f Family, slot uint64) string {
	return f.instrumentPrefix() + strconv.FormatUint(slot, 10)
}

// MarketID returns 2×10^12 + slot for whole-block markets and 1×10^12 + slot
// for inclusion-preconf markets.
func MarketID(f Family, slot uint64) int64 {
	return f.marketIDBase() + int64(slot)
}

// maxMarketSlot keeps market ids of both families apart and positive.
const maxMarketSlot = 1_000_000_000_000 - 1

// ParseInstrumentID returns the family and slot of an instrument id in the
// canonical form written by InstrumentID.
func ParseInstrumentID(id string) (Family, uint64, error) {
	var f Family
	switch {
	case strings.HasPrefix(id, WholeBlock.instrumentPrefix()):
		f = WholeBlock
	case strings.HasPrefix(id, InclusionPreconf.instrumentPrefix()):
		f = InclusionPreconf
	default:
		return "", 0, fmt.Errorf("parse instrument id %q: want ETH-WB-<slot> or ETH-PC-<slot>", id)
	}
	slot, err := ParseSlotKey([]byte(id[len(f.instrumentPrefix()):]))
	if err != nil {
		return "", 0, fmt.Errorf("parse instrument id %q: %w", id, err)
	}
	if slot > maxMarketSlot {
		return "", 0, fmt.Errorf("parse instrument id %q: slot out of range", id)
	}
	return f, slot, nil
}

// MarketOpenVersion is the payload version of market.open commands.
const MarketOpenVersion = 1

// MarketOpen is the payload of a TypeMarketOpen command: it opens one
// market of a slot with the parameters the matcher validates orders
// against. The slot clock publishes it on the slot's orders partition when
// the family's horizon reaches the slot (whole-block 64 slots ahead,
// inclusion-preconf 32), so the matcher learns market parameters from the
// log like every other input and a replay sees the same ones.
//
// The slot-level fields (seller, totals, collateral, validator type, fee
// rates) are the same in both families' commands; the first market.open of
// a slot fixes them.
type MarketOpen struct {
	Slot   uint64 `json:"slot"`
	Family Family `json:"family"`

	// PriceStep, MinPrice and MaxPrice are decimal ETH strings: ETH for the
	// whole block, ETH per gas unit for inclusion preconf.
	PriceStep string `json:"priceStep"`
	MinPrice  string `json:"minPrice"`
	MaxPrice  string `json:"maxPrice"`
	// QuantityStep, MinQuantity and MaxQuantity are integer gas units for
	// inclusion-preconf markets; whole-block markets leave them empty
	// (quantity is always 1).
	QuantityStep string `json:"quantityStep,omitempty"`
	MinQuantity  string `json:"minQuantity,omitempty"`
	MaxQuantity  string `json:"maxQuantity,omitempty"`

	// SellerUserID registered the slot's proposer; SellerAccountID is its
	// preconf trading account, which holds the block and the preconf gas
	// until they are sold.
	SellerUserID      int64  `json:"sellerUserId"`
	SellerAccountID   int64  `json:"sellerAccountId"`
	TotalGas          int64  `json:"totalGas"`
	TotalPreconf      int64  `json:"totalPreconf"`
	CollateralPerSlot string `json:"collateralPerSlot,omitempty"`
	ValidatorType     int    `json:"validatorType"`

	// Fee rates are fractions of trade value (docs/api.md "GET
	// /api/v1/p/user/fees"); empty means zero.
	BuyFeeRate           string `json:"buyFeeRate,omitempty"`
	PrimarySellFeeRate   string `json:"primarySellFeeRate,omitempty"`
	SecondarySellFeeRate string `json:"secondarySellFeeRate,omitempty"`

	// Time points of the slot, UNIX milliseconds, for readers that list
	// markets. The matcher never compares them with a clock.
	MaturityTime  int64 `json:"maturityTime,omitempty"`
	TrxSubmitTime int64 `json:"trxSubmitTime,omitempty"`
	BlockTime     int64 `json:"blockTime,omitempty"`
	FinalityTime  int64 `json:"finalityTime,omitempty"`
}

// ID is the command's envelope id. It depends only on slot and family, so
// a clock that publishes the command twice produces a duplicate the matcher
// drops.
func (m MarketOpen) ID() string {
	return "market_open:" + strconv.FormatUint(m.Slot, 10) + ":" + string(m.Family)
}

// Envelope wraps the command; at is when the clock scheduled it.
func (m MarketOpen) Envelope(at time.Time) (Envelope, error) {
	if !m.Family.Valid() {
		return Envelope{}, fmt.Errorf("market open envelope: unknown family %q", m.Family)
	}
	return NewEnvelope(TypeMarketOpen, MarketOpenVersion, m.ID(), at, m)
}

// DecodeMarketOpen returns the command carried by a TypeMarketOpen envelope.
// Parameter values are checked by the matcher, which answers a bad one
// with a market that stays closed.
func DecodeMarketOpen(e Envelope) (MarketOpen, error) {
	var m MarketOpen
	if err := decodeVersioned(e, TypeMarketOpen, MarketOpenVersion, &m); err != nil {
		return MarketOpen{}, err
	}
	if !m.Family.Valid() {
		return MarketOpen{}, fmt.Errorf("decode %s: unknown family %q", e.Type, m.Family)
	}
	if m.Slot > maxMarketSlot {
		return MarketOpen{}, fmt.Errorf("decode %s: slot %d out of range", e.Type, m.Slot)
	}
	return m, nil
}

// decodeVersioned checks type and version before decoding the payload.
func decodeVersioned(e Envelope, typ string, version int, v any) error {
	if e.Type != typ {
		return fmt.Errorf("decode %s: envelope type is %q", typ, e.Type)
	}
	if e.Version != version {
		return fmt.Errorf("decode %s: unknown version %d", typ, e.Version)
	}
	if err := e.UnmarshalData(v); err != nil {
		return fmt.Errorf("decode %s: %w", typ, err)
	}
	return nil
}
