package trading

import (
	"time"

	"github.com/gin-gonic/gin"

	"blockspace.exchange/platform/auth"
	"blockspace.exchange/topics"
)

// place serves POST /api/v1/<family>/order: one order object or an array
// of them. Every order succeeds or fails on its own; the answer lists
// each as the order listings do, in request order.
func (s *Service) place(c *gin.Context, fam topics.Family) ([]any, error) {
	items, err := bodyOf(c, func(b []byte) ([]placeItem, error) { return decodePlace(b, s.cfg.MaxPlaceOrders) })
	if err != nil {
		return nil, err
	}
	userID := auth.FromContext(c).User.UserID
	ids := make([]int64, 0, 1)
	for _, it := range items {
		if len(ids) == 0 || ids[len(ids)-1] != it.AccountID {
			ids = append(ids, it.AccountID)
		}
	}
	// A user has one preconf trading account, so every order of a request
	// that passes names the same account.
	if err := s.accounts.check(c, userID, ids...); err != nil {
		return nil, err
	}
	now := s.cfg.Now()
	orders := make([]*order, len(items))
	var checked []*order
	for i, it := range items {
		orders[i] = check(s.catalog, fam, userID, it, now)
		if orders[i].code == 0 {
			checked = append(checked, orders[i])
		}
	}
	if len(checked) > 0 {
		if err := s.commits.submit(items[0].AccountID, checked); err != nil {
			return nil, err
		}
	}
	return views(fam, orders, now), nil
}

// orderView is an order as the listings show it (interface.md
// WholeBlockOrder) with the caller's accountId and averageTradePrice. A
// refused order has no orderId, status 99, its errorCode and a message
// naming the rule.
type orderView struct {
	OrderID           *int64  `json:"orderId"`
	MarketID          *int64  `json:"marketId"`
	InstrumentID      string  `json:"instrumentId"`
	Side              bool    `json:"side"`
	OrderType         int     `json:"orderType"`
	Quantity          string  `json:"quantity"`
	Fulfilled         string  `json:"fulfilled"`
	Price             *string `json:"price"`
	Fees              string  `json:"fees"`
	Status            int     `json:"status"`
	ErrorCode         *int    `json:"errorCode"`
	ClientOrderID     *string `json:"clientOrderId"`
	Passive           bool    `json:"passive"`
	CreateDate        int64   `json:"createDate"`
	Source            int     `json:"source"`
	UpdateDate        int64   `json:"updateDate"`
	AccountID         int64   `json:"accountId"`
	AverageTradePrice *string `json:"averageTradePrice"`
	Message           string  `json:"message,omitempty"`
}

// wholeBlockView adds preconfQuantity, the preconf gas that moved with
// the block; null until the order trades.
type wholeBlockView struct {
	orderView
	PreconfQuantity *string `json:"preconfQuantity"`
}

func views(fam topics.Family, orders []*order, at time.Time) []any {
	out := make([]any, len(orders))
	for i, o := range orders {
		v := o.view(fam, at)
		if fam == topics.WholeBlock {
			out[i] = wholeBlockView{orderView: v}
		} else {
			out[i] = v
		}
	}
	return out
}

func (o *order) view(fam topics.Family, at time.Time) orderView {
	v := orderView{
		InstrumentID: o.item.InstrumentID, Side: o.item.Side, OrderType: o.item.OrderType,
		Fulfilled: "0", Fees: "0", ClientOrderID: o.clientOrderID(), Passive: o.item.Passive,
		Source: SourceAPI, AccountID: o.item.AccountID,
	}
	if o.code != 0 {
		code := o.code
		v.Status, v.ErrorCode, v.Message = topics.OrderStatusError, &code, o.message
		v.Quantity, v.CreateDate, v.UpdateDate = o.item.Quantity, at.UnixMilli(), at.UnixMilli()
		if o.item.Price != "" {
			v.Price = &o.item.Price
		}
		if f, slot, err := topics.ParseInstrumentID(o.item.InstrumentID); err == nil && f == fam {
			id := topics.MarketID(f, slot)
			v.MarketID = &id
		}
		return v
	}
	id, market := o.id, o.market.ID
	v.OrderID, v.MarketID, v.Status = &id, &market, topics.OrderStatusPending
	v.Quantity, v.Price = o.qty.String(), o.priceText()
	v.CreateDate, v.UpdateDate = o.created.UnixMilli(), o.created.UnixMilli()
	return v
}
