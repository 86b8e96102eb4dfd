package topics

import (
	"encoding/json"
	"strconv"
)

// Appending encoders of the matcher's output payloads and of order.place.
// Each writes exactly the bytes json.Marshal writes for the same value
// (field order, omitempty, HTML escaping of strings), without reflection;
// a test holds them to that. They let the matcher encode a few outputs per
// command at the rate it matches, and ingress its place commands at the
// rate it accepts them.

// AppendJSON appends the JSON encoding of ev to dst.
func (ev *OrderEvent) AppendJSON(dst []byte) []byte {
	dst = appendStringField(dst, `{"commandId":`, ev.CommandID)
	dst = appendIntField(dst, `,"orderId":`, ev.OrderID)
	if ev.ClientOrderID != "" {
		dst = appendStringField(dst, `,"clientOrderId":`, ev.ClientOrderID)
	}
	dst = appendIntField(dst, `,"userId":`, ev.UserID)
	dst = appendIntField(dst, `,"accountId":`, ev.AccountID)
	dst = appendIntField(dst, `,"marketId":`, ev.MarketID)
	dst = appendStringField(dst, `,"instrumentId":`, ev.InstrumentID)
	dst = strconv.AppendUint(append(dst, `,"slot":`...), ev.Slot, 10)
	dst = appendBoolField(dst, `,"side":`, ev.Side)
	dst = appendIntField(dst, `,"orderType":`, int64(ev.OrderType))
	dst = appendBoolField(dst, `,"passive":`, ev.Passive)
	if ev.Price != "" {
		dst = appendStringField(dst, `,"price":`, ev.Price)
	}
	dst = appendStringField(dst, `,"quantity":`, ev.Quantity)
	dst = appendStringField(dst, `,"fulfilled":`, ev.Fulfilled)
	dst = appendIntField(dst, `,"status":`, int64(ev.Status))
	if ev.ErrorCode == nil {
		dst = append(dst, `,"errorCode":null`...)
	} else {
		dst = appendIntField(dst, `,"errorCode":`, int64(*ev.ErrorCode))
	}
	if ev.Reason != "" {
		dst = appendStringField(dst, `,"reason":`, ev.Reason)
	}
	if ev.Message != "" {
		dst = appendStringField(dst, `,"message":`, ev.Message)
	}
	if ev.TradeID != 0 {
		dst = appendIntField(dst, `,"tradeId":`, ev.TradeID)
	}
	if ev.LastPrice != "" {
		dst = appendStringField(dst, `,"lastPrice":`, ev.LastPrice)
	}
	if ev.LastQuantity != "" {
		dst = appendStringField(dst, `,"lastQuantity":`, ev.LastQuantity)
	}
	if ev.LastFee != "" {
		dst = appendStringField(dst, `,"lastFee":`, ev.LastFee)
	}
	if ev.LastPreconfQuantity != "" {
		dst = appendStringField(dst, `,"lastPreconfQuantity":`, ev.LastPreconfQuantity)
	}
	return append(dst, '}')
}

// AppendJSON appends the JSON encoding of p to dst.
func (p *OrderPlace) AppendJSON(dst []byte) []byte {
	dst = appendIntField(dst, `{"orderId":`, p.OrderID)
	dst = appendIntField(dst, `,"userId":`, p.UserID)
	dst = appendIntField(dst, `,"accountId":`, p.AccountID)
	dst = appendStringField(dst, `,"instrumentId":`, p.InstrumentID)
	dst = appendBoolField(dst, `,"side":`, p.Side)
	dst = appendIntField(dst, `,"orderType":`, int64(p.OrderType))
	dst = appendStringField(dst, `,"quantity":`, p.Quantity)
	if p.Price != "" {
		dst = appendStringField(dst, `,"price":`, p.Price)
	}
	if p.ClientOrderID != "" {
		dst = appendStringField(dst, `,"clientOrderId":`, p.ClientOrderID)
	}
	dst = appendBoolField(dst, `,"passive":`, p.Passive)
	if p.Source != 0 {
		dst = appendIntField(dst, `,"source":`, int64(p.Source))
	}
	return append(dst, '}')
}

// AppendJSON appends the JSON encoding of c to dst.
func (c *CancelRejected) AppendJSON(dst []byte) []byte {
	dst = appendStringField(dst, `{"commandId":`, c.CommandID)
	dst = appendIntField(dst, `,"userId":`, c.UserID)
	dst = appendIntField(dst, `,"accountId":`, c.AccountID)
	dst = appendStringField(dst, `,"instrumentId":`, c.InstrumentID)
	if c.OrderID != 0 {
		dst = appendIntField(dst, `,"orderId":`, c.OrderID)
	}
	if c.ClientOrderID != "" {
		dst = appendStringField(dst, `,"clientOrderId":`, c.ClientOrderID)
	}
	dst = appendIntField(dst, `,"code":`, int64(c.Code))
	if c.Message != "" {
		dst = appendStringField(dst, `,"message":`, c.Message)
	}
	return append(dst, '}')
}

// AppendJSON appends the JSON encoding of m to dst.
func (m *MarketStatus) AppendJSON(dst []byte) []byte {
	dst = appendStringField(dst, `{"commandId":`, m.CommandID)
	dst = appendIntField(dst, `,"marketId":`, m.MarketID)
	dst = appendStringField(dst, `,"instrumentId":`, m.InstrumentID)
	dst = strconv.AppendUint(append(dst, `,"slot":`...), m.Slot, 10)
	dst = appendIntField(dst, `,"status":`, int64(m.Status))
	dst = appendIntField(dst, `,"availablePreconf":`, m.AvailablePreconf)
	dst = appendIntField(dst, `,"totalPreconf":`, m.TotalPreconf)
	return append(dst, '}')
}

// AppendJSON appends the JSON encoding of f to dst.
func (f *Fill) AppendJSON(dst []byte) []byte {
	dst = appendIntField(dst, `{"tradeId":`, f.TradeID)
	dst = appendStringField(dst, `,"commandId":`, f.CommandID)
	dst = appendIntField(dst, `,"marketId":`, f.MarketID)
	dst = appendStringField(dst, `,"instrumentId":`, f.InstrumentID)
	dst = strconv.AppendUint(append(dst, `,"slot":`...), f.Slot, 10)
	dst = appendStringField(dst, `,"price":`, f.Price)
	dst = appendStringField(dst, `,"quantity":`, f.Quantity)
	dst = appendBoolField(dst, `,"side":`, f.Side)
	dst = appendIntField(dst, `,"takerOrderId":`, f.TakerOrderID)
	dst = appendIntField(dst, `,"takerUserId":`, f.TakerUserID)
	dst = appendIntField(dst, `,"takerAccountId":`, f.TakerAccountID)
	dst = appendIntField(dst, `,"makerOrderId":`, f.MakerOrderID)
	dst = appendIntField(dst, `,"makerUserId":`, f.MakerUserID)
	dst = appendIntField(dst, `,"makerAccountId":`, f.MakerAccountID)
	dst = appendBoolField(dst, `,"primarySale":`, f.PrimarySale)
	if f.PreconfQuantity != "" {
		dst = appendStringField(dst, `,"preconfQuantity":`, f.PreconfQuantity)
	}
	dst = appendIntField(dst, `,"availablePreconf":`, f.AvailablePreconf)
	dst = appendStringField(dst, `,"buyerFee":`, f.BuyerFee)
	dst = appendStringField(dst, `,"sellerFee":`, f.SellerFee)
	return append(dst, '}')
}

func appendIntField(dst []byte, name string, v int64) []byte {
	return strconv.AppendInt(append(dst, name...), v, 10)
}

func appendBoolField(dst []byte, name string, v bool) []byte {
	return strconv.AppendBool(append(dst, name...), v)
}

func appendStringField(dst []byte, name, v string) []byte {
	return appendJSONString(append(dst, name...), v, true)
}

// appendJSONString appends s as a JSON string the way encoding/json does,
// escaping <, > and & when html is set (json.Marshal) and not otherwise
// (an Encoder with SetEscapeHTML(false)). Strings of plain printable ASCII,
// the common case, are copied; anything else goes through encoding/json.
func appendJSONString(dst []byte, s string, html bool) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < ' ' || c > '~' || c == '"' || c == '\\' || (html && (c == '<' || c == '>' || c == '&')) {
			return appendSlowString(dst, s, html)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

func appendSlowString(dst []byte, s string, html bool) []byte {
	b, _ := json.Marshal(s) // a string always marshals
	if html {
		return append(dst, b...)
	}
	// json.Marshal escaped <, > and &; only these three produce \u003c,
	// \u003e and \u0026, so undoing them is exact.
	for i := 0; i < len(b); i++ {
		if b[i] == '\\' && i+5 < len(b) && b[i+1] == 'u' && b[i+2] == '0' && b[i+3] == '0' {
			switch string(b[i+4 : i+6]) {
			case "3c":
				dst, i = append(dst, '<'), i+5
				continue
			case "3e":
				dst, i = append(dst, '>'), i+5
				continue
			case "26":
				dst, i = append(dst, '&'), i+5
				continue
			}
		}
		if b[i] == '\\' && i+1 < len(b) {
			dst = append(dst, b[i], b[i+1])
			i++
			continue
		}
		dst = append(dst, b[i])
	}
	return dst
}
