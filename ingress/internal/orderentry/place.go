package orderentry

import (
	"context"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/shopspring/decimal"

	"blockspace.exchange/platform/api"
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
		s.awaitOrders(c, checked)
	}
	return views(fam, orders, now), nil
}

// awaitOrders waits up to AnswerWait for the matcher's decisions about
// the stored orders; view shows those that arrived.
func (s *Service) awaitOrders(ctx context.Context, orders []*order) {
	if s.decisions == nil {
		return
	}
	defer s.decisions.forgetOrders(orders)
	decs := make([]*decision, 0, len(orders))
	for _, o := range orders {
		if o.decision != nil {
			decs = append(decs, o.decision)
		}
	}
	await(ctx, s.cfg.AnswerWait, decs)
}

// wholeBlockView adds preconfQuantity, the preconf gas that moved with
// the block; null until the order trades.
type wholeBlockView struct {
	api.OwnOrder
	PreconfQuantity *string `json:"preconfQuantity"`
}

func views(fam topics.Family, orders []*order, at time.Time) []any {
	out := make([]any, len(orders))
	for i, o := range orders {
		v := o.view(fam, at)
		if fam == topics.WholeBlock {
			wb := wholeBlockView{OwnOrder: v}
			if dec := o.decision; dec.decided() && dec.traded {
				gas := dec.preconf.String()
				wb.PreconfQuantity = &gas
			}
			out[i] = wb
		} else {
			out[i] = v
		}
	}
	return out
}

// view is the order as the listings show it (platform/api's OwnOrder: the
// caller's accountId and averageTradePrice). A refused order has no
// orderId, status 99, its errorCode and a message naming the rule.
func (o *order) view(fam topics.Family, at time.Time) api.OwnOrder {
	v := api.OwnOrder{Order: api.Order{
		InstrumentID: o.item.InstrumentID, Side: o.item.Side, OrderType: o.item.OrderType,
		Fulfilled: "0", Fees: "0", ClientOrderID: o.clientOrderID(), Passive: o.item.Passive,
		Source: SourceAPI,
	}, AccountID: o.item.AccountID}
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
	if dec := o.decision; dec.decided() && dec.events {
		st := dec.state
		v.Status, v.Fulfilled, v.ErrorCode, v.Message, v.UpdateDate = st.Status, st.Fulfilled, st.ErrorCode, st.Message, dec.at
		if dec.traded {
			fees, avg := dec.fees.String(), averagePrice(dec.value, st.Fulfilled)
			v.Fees, v.AverageTradePrice = fees, avg
		}
	}
	return v
}

// averagePrice is the value-weighted price of an order's fills, value /
// fulfilled rounded to 18 decimals, as the settler keeps it (docs/api.md
// "own order"); nil before the first fill.
func averagePrice(value decimal.Decimal, fulfilled string) *string {
	qty, err := decimal.NewFromString(fulfilled)
	if err != nil || qty.Sign() <= 0 {
		return nil
	}
	avg := value.DivRound(qty, 18).String()
	return &avg
}
