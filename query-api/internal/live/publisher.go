package live

import (
	"blockspace.exchange/query-api/internal/markets"
)

// publisher turns the market model's changes into pushes. It runs under
// the model's lock (markets.Listener), encodes each push once and only
// when someone subscribed, and never blocks.
type publisher struct{ hub *Hub }

func (p publisher) MarketChanged(c markets.MarketChange) {
	if p.hub.wants(ChannelMarket, c.Family, c.InstrumentID) {
		p.hub.publish(ChannelMarket, c.Family, c.InstrumentID,
			encode(push{Channel: ChannelMarket, Time: c.Time, Instrument: c.InstrumentID, Action: c.Action, Payload: c.Market}))
	}
}

func (p publisher) BookChanged(u markets.BookUpdate) {
	if p.hub.wants(ChannelBook, u.Family, u.InstrumentID) {
		p.hub.publish(ChannelBook, u.Family, u.InstrumentID,
			encode(push{Channel: ChannelBook, Time: u.Time, Instrument: u.InstrumentID, Action: actionUpdate, Payload: u}))
	}
}

func (p publisher) TickerChanged(t markets.Ticker) {
	if p.hub.wants(ChannelTicker, t.Family, t.InstrumentID) {
		p.hub.publish(ChannelTicker, t.Family, t.InstrumentID,
			encode(push{Channel: ChannelTicker, Time: t.UpdateDate, Instrument: t.InstrumentID, Action: actionUpdate, Payload: t}))
	}
}

func (p publisher) Traded(t markets.Trade) {
	if p.hub.wants(ChannelTrade, t.Family, t.InstrumentID) {
		p.hub.publish(ChannelTrade, t.Family, t.InstrumentID,
			encode(push{Channel: ChannelTrade, Time: t.Date, Instrument: t.InstrumentID, Action: actionTrade, Payload: t}))
	}
}

func (p publisher) OrderChanged(u markets.OrderUpdate) {
	id := u.Order.InstrumentID
	if p.hub.wantsUser(u.UserID, ChannelOrders, u.Family, id) {
		p.hub.publishUser(u.UserID, ChannelOrders, u.Family, id,
			encode(push{Channel: ChannelOrders, Time: u.Time, Instrument: id, Action: u.Action, Payload: u.Order}))
	}
}
