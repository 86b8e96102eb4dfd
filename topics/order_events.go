package topics

// MatcherEventVersion is the payload version of everything the matcher
// writes to OrderEvents and Fills.
//
// Envelope ids of matcher output are derived from the slot's state
// ("oe:<slot>:<n>" for order events, "fill:<tradeId>" for fills), and the
// envelope time is the time of the input that caused them, so replaying a
// partition reproduces every output byte for byte.
const MatcherEventVersion = 1

// Market status values (docs/api.md "Values and identifiers").
const (
	MarketStatusNotStarted       = 0
	MarketStatusOpen             = 1
	MarketStatusTradingClosed    = 2
	MarketStatusSubmissionClosed = 3
	MarketStatusFinalized        = 4
)

// Reasons of system cancellations, in OrderEvent.Reason.
const (
	// ReasonSelfTrade: the resting order met an order of its own account
	// and was cancelled so that the incoming order could continue.
	ReasonSelfTrade = "self_trade"
	// ReasonUnfilledRemainder: a market order's quantity left after
	// matching, which never rests.
	ReasonUnfilledRemainder = "unfilled_remainder"
	// ReasonFillOrKill: a fill-or-kill order the book could not fill whole.
	ReasonFillOrKill = "fill_or_kill"
	// ReasonUser, ReasonCancelBatch and ReasonCancelAll name the command
	// that cancelled an order for its owner.
	ReasonUser        = "cancel"
	ReasonCancelBatch = "cancel_batch"
	ReasonCancelAll   = "cancel_all"
	// ReasonMarketClosed: the order was open at the trading_closed tick.
	ReasonMarketClosed = "market_closed"
)

// OrderEvent is the payload of order.accepted, order.rejected,
// order.filled, order.cancelled and order.expired. It carries the order's
// state after the event, so a read model needs only the latest event of an
// order; the type says what happened.
//
//topics:appendjson
//topics:readjson
type OrderEvent struct {
	// CommandID is the envelope id of the command or tick that caused the
	// event: the place command for accepted, rejected and taker fills, the
	// cancel command for user cancels, the tick for expiry.
	CommandID     string `json:"commandId"`
	OrderID       int64  `json:"orderId"`
	ClientOrderID string `json:"clientOrderId,omitempty"`
	UserID        int64  `json:"userId"`
	AccountID     int64  `json:"accountId"`
	MarketID      int64  `json:"marketId"`
	InstrumentID  string `json:"instrumentId"`
	Slot          uint64 `json:"slot"`
	Side          bool   `json:"side"`
	OrderType     int    `json:"orderType"`
	Passive       bool   `json:"passive"`
	// Price is the limit price, or a market order's worst price.
	Price    string `json:"price,omitempty"`
	Quantity string `json:"quantity"`
	// Fulfilled is the quantity executed so far.
	Fulfilled string `json:"fulfilled"`
	Status    int    `json:"status"`
	// ErrorCode is null unless the order was rejected or cancelled by the
	// system (docs/codes.md "Application codes": 191, 192).
	ErrorCode *int   `json:"errorCode"`
	Reason    string `json:"reason,omitempty"`
	// Message names the field and rule that rejected an order.
	Message string `json:"message,omitempty"`
	// TradeID, LastPrice and LastQuantity describe the fill of an
	// order.filled event; LastFee is the fee the order's owner pays on
	// that fill, and LastPreconfQuantity, on a whole-block fill, the
	// preconf gas that moved with the block.
	TradeID             int64  `json:"tradeId,omitempty"`
	LastPrice           string `json:"lastPrice,omitempty"`
	LastQuantity        string `json:"lastQuantity,omitempty"`
	LastFee             string `json:"lastFee,omitempty"`
	LastPreconfQuantity string `json:"lastPreconfQuantity,omitempty"`
}

// CancelRejected is the payload of order.cancel_rejected: one order named
// by a cancel command that could not be cancelled (code 108 no such order,
// 109 already done or cancelled).
//
//topics:appendjson
//topics:readjson
type CancelRejected struct {
	CommandID     string `json:"commandId"`
	UserID        int64  `json:"userId"`
	AccountID     int64  `json:"accountId"`
	InstrumentID  string `json:"instrumentId"`
	OrderID       int64  `json:"orderId,omitempty"`
	ClientOrderID string `json:"clientOrderId,omitempty"`
	Code          int    `json:"code"`
	Message       string `json:"message,omitempty"`
}

// MarketStatus is the payload of market.status: a market opened or moved
// to the status of a clock tick.
//
//topics:appendjson
//topics:readjson
type MarketStatus struct {
	CommandID    string `json:"commandId"`
	MarketID     int64  `json:"marketId"`
	InstrumentID string `json:"instrumentId"`
	Slot         uint64 `json:"slot"`
	Status       int    `json:"status"`
	// AvailablePreconf is the preconf gas that goes with the whole block
	// at this point (docs/matcher.md "Whole block and preconf gas").
	AvailablePreconf int64 `json:"availablePreconf"`
	TotalPreconf     int64 `json:"totalPreconf"`
}

// Fill is the payload of trade.executed: a taker order matched a resting
// maker order. The settler moves funds and positions from it.
//
//topics:appendjson
//topics:readjson
type Fill struct {
	TradeID      int64  `json:"tradeId"`
	CommandID    string `json:"commandId"`
	MarketID     int64  `json:"marketId"`
	InstrumentID string `json:"instrumentId"`
	Slot         uint64 `json:"slot"`
	// Price is the maker's price; Quantity is "1" for whole-block trades
	// and gas units for inclusion-preconf trades.
	Price    string `json:"price"`
	Quantity string `json:"quantity"`
	// Side is the taker's side, true when the taker bought: the trade's
	// direction.
	Side bool `json:"side"`

	TakerOrderID   int64 `json:"takerOrderId"`
	TakerUserID    int64 `json:"takerUserId"`
	TakerAccountID int64 `json:"takerAccountId"`
	MakerOrderID   int64 `json:"makerOrderId"`
	MakerUserID    int64 `json:"makerUserId"`
	MakerAccountID int64 `json:"makerAccountId"`

	// PrimarySale is true when the seller is the slot's seller account
	// selling what it was issued; false for a resale by a buyer.
	PrimarySale bool `json:"primarySale"`
	// PreconfQuantity is, for whole-block trades, the preconf gas that
	// moved with the block from seller to buyer.
	PreconfQuantity string `json:"preconfQuantity,omitempty"`
	// AvailablePreconf is the slot's availablePreconf after the trade.
	AvailablePreconf int64 `json:"availablePreconf"`

	// BuyerFee and SellerFee are in ETH, from the market's fee rates.
	BuyerFee  string `json:"buyerFee"`
	SellerFee string `json:"sellerFee"`
}
