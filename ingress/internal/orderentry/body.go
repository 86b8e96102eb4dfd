package orderentry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/platform/market"
)

// The bodies of the order operations (docs/api.md "Order entry (bearer)").
// Decoding checks the shape only: JSON types, required members, counts.
// What breaks it is a 400 for the whole request whose message names the
// order and the member; the rules of the market are judged per order
// later. Members the interface does not define are ignored.

// placeItem is one order of a place body.
type placeItem struct {
	AccountID     int64
	InstrumentID  string
	Side          bool // true = buy
	OrderType     int
	Quantity      string
	Price         string // "" when absent or null
	ClientOrderID string // "" when absent or null
	Passive       bool
}

// decodePlace reads a place body: one order object or an array of 1 to
// max of them. The common body is read in one pass into placeJSON; a body
// that fails that pass is read again member by member to say what is
// wrong where.
func decodePlace(body []byte, max int) ([]placeItem, error) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '[' {
		var j placeJSON
		if len(trimmed) == 0 || trimmed[0] != '{' || httpx.DecodeJSONBytes(body, &j) != nil {
			m, err := members(body, "body")
			if err != nil {
				return nil, err
			}
			j = placeJSONOf(m)
		}
		it, err := placeFrom(fields{get: j.member})
		if err != nil {
			return nil, err
		}
		return []placeItem{it}, nil
	}
	var js []placeJSON
	if err := httpx.DecodeJSONBytes(body, &js); err != nil {
		if js, err = decodePlaceArray(body); err != nil {
			return nil, err
		}
	}
	if len(js) == 0 || len(js) > max {
		return nil, httpx.Invalid("body must hold 1 to %d orders, got %d", max, len(js))
	}
	items := make([]placeItem, len(js))
	for i := range js {
		var err error
		if items[i], err = placeFrom(fields{get: js[i].member, where: fmt.Sprintf("order %d: ", i)}); err != nil {
			return nil, err
		}
	}
	return items, nil
}

// decodePlaceArray reads an array of orders element by element, so that
// a malformed element is named.
func decodePlaceArray(body []byte) ([]placeJSON, error) {
	var raw []json.RawMessage
	if err := httpx.DecodeJSONBytes(body, &raw); err != nil {
		return nil, err
	}
	js := make([]placeJSON, len(raw))
	for i, r := range raw {
		m, err := members(r, fmt.Sprintf("order %d", i))
		if err != nil {
			return nil, err
		}
		js[i] = placeJSONOf(m)
	}
	return js, nil
}

// placeJSON is a place order's members as sent.
type placeJSON struct {
	AccountID     json.RawMessage `json:"accountId"`
	InstrumentID  json.RawMessage `json:"instrumentId"`
	Side          json.RawMessage `json:"side"`
	OrderType     json.RawMessage `json:"orderType"`
	Quantity      json.RawMessage `json:"quantity"`
	Price         json.RawMessage `json:"price"`
	ClientOrderID json.RawMessage `json:"clientOrderId"`
	Passive       json.RawMessage `json:"passive"`
}

func placeJSONOf(m map[string]json.RawMessage) placeJSON {
	return placeJSON{
		AccountID: m["accountId"], InstrumentID: m["instrumentId"], Side: m["side"], OrderType: m["orderType"],
		Quantity: m["quantity"], Price: m["price"], ClientOrderID: m["clientOrderId"], Passive: m["passive"],
	}
}

func (j *placeJSON) member(name string) json.RawMessage {
	switch name {
	case "accountId":
		return j.AccountID
	case "instrumentId":
		return j.InstrumentID
	case "side":
		return j.Side
	case "orderType":
		return j.OrderType
	case "quantity":
		return j.Quantity
	case "price":
		return j.Price
	case "clientOrderId":
		return j.ClientOrderID
	case "passive":
		return j.Passive
	}
	return nil
}

func placeFrom(f fields) (placeItem, error) {
	var it placeItem
	var typ int64
	var ok bool
	f.positiveID("accountId", &it.AccountID)
	f.requiredString("instrumentId", &it.InstrumentID)
	if f.boolean("side", &it.Side, &ok); !ok && f.err == nil {
		f.fail("side is required: true to buy, false to sell")
	}
	if f.integer("orderType", &typ, &ok); !ok && f.err == nil {
		f.fail("orderType is required: 1 market, 2 limit, 3 fill-or-kill")
	}
	if typ < -1<<31 || typ > 1<<31-1 {
		f.fail("orderType %d is not 1, 2 or 3", typ)
	}
	it.OrderType = int(typ)
	if f.decimal("quantity", &it.Quantity, &ok); !ok && f.err == nil {
		f.fail("quantity is required")
	}
	f.decimal("price", &it.Price, &ok)
	f.str("clientOrderId", &it.ClientOrderID, &ok)
	f.boolean("passive", &it.Passive, &ok)
	return it, f.err
}

// cancelOne is the body of cancel-order.
type cancelOne struct {
	AccountID     int64
	InstrumentID  string
	OrderID       int64  // 0 when the order is named by ClientOrderID
	ClientOrderID string // used when OrderID is 0
}

// decodeCancel reads a cancel-order body. With both orderId and
// clientOrderId the orderId names the order, as in the matcher.
func decodeCancel(body []byte) (cancelOne, error) {
	m, err := members(body, "body")
	if err != nil {
		return cancelOne{}, err
	}
	f := fields{get: inMap(m)}
	var c cancelOne
	var byID, byClient bool
	f.positiveID("accountId", &c.AccountID)
	f.requiredString("instrumentId", &c.InstrumentID)
	if f.optionalPositiveID("orderId", &c.OrderID, &byID); !byID {
		f.str("clientOrderId", &c.ClientOrderID, &byClient)
		if f.err == nil && c.ClientOrderID == "" {
			f.fail("orderId or clientOrderId is required")
		}
	}
	return c, f.err
}

// cancelBatch is the body of cancel-batch-orders.
type cancelBatch struct {
	AccountID      int64
	InstrumentID   string
	OrderIDs       []int64
	ClientOrderIDs []string
}

func decodeCancelBatch(body []byte, max int) (cancelBatch, error) {
	m, err := members(body, "body")
	if err != nil {
		return cancelBatch{}, err
	}
	f := fields{get: inMap(m)}
	var c cancelBatch
	f.positiveID("accountId", &c.AccountID)
	f.requiredString("instrumentId", &c.InstrumentID)
	var ids []json.Number
	f.array("orderIds", &ids)
	f.array("clientOrderIds", &c.ClientOrderIDs)
	if f.err != nil {
		return cancelBatch{}, f.err
	}
	if n := len(ids) + len(c.ClientOrderIDs); n == 0 || n > max {
		return cancelBatch{}, httpx.Invalid("orderIds and clientOrderIds must name 1 to %d orders together, got %d", max, n)
	}
	c.OrderIDs = make([]int64, len(ids))
	for i, n := range ids {
		id, err := n.Int64()
		if err != nil || id <= 0 {
			return cancelBatch{}, httpx.Invalid("orderIds[%d] must be a positive integer, got %s", i, short(n.String()))
		}
		c.OrderIDs[i] = id
	}
	for i, id := range c.ClientOrderIDs {
		if id == "" {
			return cancelBatch{}, httpx.Invalid("clientOrderIds[%d] is empty", i)
		}
	}
	return c, nil
}

// cancelAll is the body of cancel-all-orders; InstrumentID "" means every
// instrument of the family.
type cancelAll struct {
	AccountID    int64
	InstrumentID string
}

// decodeCancelAll reads a cancel-all body; an instrumentId omitted, null
// or blank means every instrument of the family.
func decodeCancelAll(body []byte) (cancelAll, error) {
	m, err := members(body, "body")
	if err != nil {
		return cancelAll{}, err
	}
	f := fields{get: inMap(m)}
	var c cancelAll
	var ok bool
	f.positiveID("accountId", &c.AccountID)
	f.str("instrumentId", &c.InstrumentID, &ok)
	c.InstrumentID = strings.TrimSpace(c.InstrumentID)
	return c, f.err
}

// members decodes a JSON object into its members.
func members(b []byte, what string) (map[string]json.RawMessage, error) {
	trimmed := bytes.TrimLeft(b, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] != '{' {
		return nil, httpx.Invalid("%s must be a JSON object", what)
	}
	var m map[string]json.RawMessage
	if err := httpx.DecodeJSONBytes(b, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, httpx.Invalid("%s must be a JSON object, got null", what)
	}
	return m, nil
}

// fields reads members of one object and keeps the first error, whose
// message starts with where.
type fields struct {
	get   func(name string) json.RawMessage
	where string
	err   error
}

func inMap(m map[string]json.RawMessage) func(string) json.RawMessage {
	return func(name string) json.RawMessage { return m[name] }
}

func (f *fields) fail(format string, args ...any) {
	if f.err == nil {
		f.err = httpx.Invalid("%s%s", f.where, fmt.Sprintf(format, args...))
	}
}

// raw returns a member's JSON, nil when absent or null.
func (f *fields) raw(name string) json.RawMessage {
	v := f.get(name)
	if len(v) == 0 || bytes.Equal(v, []byte("null")) {
		return nil
	}
	return v
}

func (f *fields) str(name string, dst *string, ok *bool) {
	v := f.raw(name)
	*ok = v != nil
	if v == nil || f.err != nil {
		return
	}
	if v[0] != '"' || json.Unmarshal(v, dst) != nil {
		f.fail("%s must be a string, got %s", name, short(string(v)))
	}
}

func (f *fields) requiredString(name string, dst *string) {
	var ok bool
	if f.str(name, dst, &ok); f.err == nil && *dst == "" {
		f.fail("%s is required", name)
	}
}

func (f *fields) boolean(name string, dst *bool, ok *bool) {
	v := f.raw(name)
	*ok = v != nil
	if v == nil || f.err != nil {
		return
	}
	if b, err := strconv.ParseBool(string(v)); err == nil && (string(v) == "true" || string(v) == "false") {
		*dst = b
		return
	}
	f.fail("%s must be true or false, got %s", name, short(string(v)))
}

// integer reads a JSON integer (or a string holding one).
func (f *fields) integer(name string, dst *int64, ok *bool) {
	v := f.raw(name)
	*ok = v != nil
	if v == nil || f.err != nil {
		return
	}
	n, err := strconv.ParseInt(string(bytes.Trim(v, `"`)), 10, 64)
	if err != nil {
		f.fail("%s must be an integer, got %s", name, short(string(v)))
		return
	}
	*dst = n
}

func (f *fields) optionalPositiveID(name string, dst *int64, ok *bool) {
	if f.integer(name, dst, ok); *ok && f.err == nil && *dst <= 0 {
		f.fail("%s must be a positive integer, got %d", name, *dst)
	}
}

func (f *fields) positiveID(name string, dst *int64) {
	var ok bool
	if f.optionalPositiveID(name, dst, &ok); !ok && f.err == nil {
		f.fail("%s is required", name)
	}
}

// decimal reads an amount: a JSON string, or a JSON number taken digit
// for digit (never through a float). Whether it is a decimal is a rule
// of the market, judged per order.
func (f *fields) decimal(name string, dst *string, ok *bool) {
	v := f.raw(name)
	*ok = v != nil
	if v == nil || f.err != nil {
		return
	}
	if v[0] == '"' {
		if json.Unmarshal(v, dst) != nil {
			f.fail("%s must be a decimal string, got %s", name, short(string(v)))
		}
		return
	}
	if v[0] == '-' || (v[0] >= '0' && v[0] <= '9') {
		*dst = string(v)
		return
	}
	f.fail("%s must be a decimal string, got %s", name, short(string(v)))
}

// array reads a JSON array of the element type of dst.
func (f *fields) array(name string, dst any) {
	v := f.raw(name)
	if v == nil || f.err != nil {
		return
	}
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	if v[0] != '[' || dec.Decode(dst) != nil {
		f.fail("%s must be an array of %s, got %s", name, elementKind(dst), short(string(v)))
	}
}

func elementKind(dst any) string {
	if _, ok := dst.(*[]string); ok {
		return "strings"
	}
	return "integers"
}

// short cuts client text for a message, as the order rules do.
func short(s string) string { return market.Short(s) }
