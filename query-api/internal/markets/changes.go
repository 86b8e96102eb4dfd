package markets

import "blockspace.exchange/topics"

// Listener learns every change of the model as it happens, for live
// feeds. Its methods are called with the model's write lock held, after
// the change is applied, in the order of the log: a reader that takes a
// View and registers interest inside it sees every change after that view
// and none before. They must not block and must not call the model.
type Listener interface {
	MarketChanged(MarketChange)
	BookChanged(BookUpdate)
	TickerChanged(Ticker)
	Traded(Trade)
	OrderChanged(OrderUpdate)
}

// Market actions of a MarketChange: the market became visible open, or
// moved to a later status (docs/api.md "Values and identifiers": market
// status).
const (
	ActionOpen             = "open"
	ActionTradingClosed    = "tradingClosed"
	ActionSubmissionClosed = "submissionClosed"
	ActionFinalized        = "finalized"
)

func statusAction(status int) string {
	switch status {
	case topics.MarketStatusOpen:
		return ActionOpen
	case topics.MarketStatusTradingClosed:
		return ActionTradingClosed
	case topics.MarketStatusSubmissionClosed:
		return ActionSubmissionClosed
	default:
		return ActionFinalized
	}
}

// MarketChange is a market's lifecycle step. Market is the market as the
// REST reads show it (WholeBlockMarket or InclusionPreconfMarket).
type MarketChange struct {
	Family       topics.Family
	InstrumentID string
	Action       string
	Time         int64
	Market       any
}

// Trade is one fill as public trade lists show it (the WholeBlockTrade of
// docs/api.md "Orders, trades and positions"); side is the taker's.
type Trade struct {
	Family          topics.Family `json:"-"`
	InstrumentID    string        `json:"instrumentId"`
	TrxID           int64         `json:"trxId"`
	Side            bool          `json:"side"`
	Price           string        `json:"price"`
	Quantity        string        `json:"quantity"`
	PreconfQuantity string        `json:"preconfQuantity,omitempty"`
	Date            int64         `json:"date"`
}

// Ticker is the summary of one market since it opened: the last trade,
// the best prices of its book and what traded.
type Ticker struct {
	Family           topics.Family `json:"-"`
	InstrumentID     string        `json:"instrumentId"`
	MarketID         int64         `json:"marketId"`
	Slot             uint64        `json:"slot"`
	Status           int           `json:"status"`
	Price            *string       `json:"price"`
	Direction        *bool         `json:"direction"`
	BestBid          *string       `json:"bestBid"`
	BestAsk          *string       `json:"bestAsk"`
	MidPrice         *string       `json:"midPrice"`
	Open             *string       `json:"open"`
	High             *string       `json:"high"`
	Low              *string       `json:"low"`
	Volume           string        `json:"volume"`
	Trades           int           `json:"trades"`
	AvailablePreconf int64         `json:"availablePreconf"`
	UpdateDate       int64         `json:"updateDate"`
}

// Order actions of an OrderUpdate: the order event's kind, or a refused
// cancel.
const (
	ActionAccepted       = "accepted"
	ActionRejected       = "rejected"
	ActionFilled         = "filled"
	ActionCancelled      = "cancelled"
	ActionExpired        = "expired"
	ActionCancelRejected = "cancelRejected"
)

var orderActions = map[string]string{
	topics.TypeOrderAccepted: ActionAccepted, topics.TypeOrderRejected: ActionRejected,
	topics.TypeOrderFilled: ActionFilled, topics.TypeOrderCancelled: ActionCancelled,
	topics.TypeOrderExpired: ActionExpired, topics.TypeCancelRejected: ActionCancelRejected,
}

// Order is one order of its owner after an event (the order fields of
// docs/api.md "Orders, trades and positions" plus the event's details). A
// cancelRejected update carries the order the cancel named and the refusal in
// errorCode and message.
type Order struct {
	OrderID       int64  `json:"orderId"`
	ClientOrderID string `json:"clientOrderId,omitempty"`
	AccountID     int64  `json:"accountId"`
	MarketID      int64  `json:"marketId"`
	InstrumentID  string `json:"instrumentId"`
	Side          bool   `json:"side"`
	OrderType     int    `json:"orderType"`
	Price         string `json:"price,omitempty"`
	Quantity      string `json:"quantity,omitempty"`
	Fulfilled     string `json:"fulfilled,omitempty"`
	Status        int    `json:"status"`
	ErrorCode     *int   `json:"errorCode"`
	Passive       bool   `json:"passive"`
	Reason        string `json:"reason,omitempty"`
	Message       string `json:"message,omitempty"`
	TradeID       int64  `json:"tradeId,omitempty"`
	LastPrice     string `json:"lastPrice,omitempty"`
	LastQuantity  string `json:"lastQuantity,omitempty"`
	LastFee       string `json:"lastFee,omitempty"`
	// LastPreconfQuantity is the preconf gas of a whole-block fill.
	LastPreconfQuantity string `json:"lastPreconfQuantity,omitempty"`
	CreateDate          int64  `json:"createDate,omitempty"`
	UpdateDate          int64  `json:"updateDate"`
}

// OrderUpdate is an event about one user's order.
type OrderUpdate struct {
	UserID int64
	Family topics.Family
	Action string
	Time   int64
	Order  Order
}

func orderView(o *topics.OrderEvent, created, updated int64) Order {
	return Order{
		OrderID: o.OrderID, ClientOrderID: o.ClientOrderID, AccountID: o.AccountID, MarketID: o.MarketID,
		InstrumentID: o.InstrumentID, Side: o.Side, OrderType: o.OrderType, Price: o.Price, Quantity: o.Quantity,
		Fulfilled: o.Fulfilled, Status: o.Status, ErrorCode: o.ErrorCode, Passive: o.Passive, Reason: o.Reason,
		Message: o.Message, TradeID: o.TradeID, LastPrice: o.LastPrice, LastQuantity: o.LastQuantity,
		LastFee: o.LastFee, LastPreconfQuantity: o.LastPreconfQuantity, CreateDate: created, UpdateDate: updated,
	}
}

// nopListener is the listener of a model nobody watches.
type nopListener struct{}

func (nopListener) MarketChanged(MarketChange) {}
func (nopListener) BookChanged(BookUpdate)     {}
func (nopListener) TickerChanged(Ticker)       {}
func (nopListener) Traded(Trade)               {}
func (nopListener) OrderChanged(OrderUpdate)   {}
