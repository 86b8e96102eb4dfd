package queryapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"blockspace.exchange/topics"
)

// tradingFixture is a query-api over orders, trades and positions written
// as the settler writes them: carol sells the slots (primary sales), alice
// and bob buy, and two busy markets (ETH-WB-200 orders, ETH-PC-200 trades)
// have enough rows to page through.
type tradingFixture struct {
	h                 http.Handler
	pool              *pgxpool.Pool
	alice, bob, carol testUser
	orders            []fixtureOrder // every order inserted, by orderId
	trades            []fixtureTrade // every trade inserted, by tradeId
}

type fixtureOrder struct {
	id         int64
	owner      testUser
	instrument string
	buy        bool
	orderType  int
	price      string // "" = NULL (market order without a worst price)
	quantity   string
	fulfilled  string
	avg        string // "" = NULL
	fees       string
	status     int
	errorCode  int // 0 = NULL
	clientID   string
}

type fixtureTrade struct {
	id                  int64
	instrument          string
	price, quantity     string
	preconf             string // "" = NULL
	takerBuys           bool
	taker, maker        int64 // order ids
	buyer, seller       testUser
	buyerFee, sellerFee string
}

// fixtureTime is when every fixture row was written; order i is created
// i milliseconds later and updated one second after that.
var fixtureTime = time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)

// statusCycle is every order status; the busy market's orders take them
// in turn.
var statusCycle = append(topics.LiveOrderStatuses(), topics.FinalOrderStatuses()...)

const busyOrders, busyTrades = 120, 25

func newTradingFixture(t testing.TB) *tradingFixture {
	t.Helper()
	s, pool := newService(t, "dev", "", nil)
	is := newIssuer(t, s, pool)
	f := &tradingFixture{h: s.Handler(), pool: pool}
	f.alice = is.user(t, "0x00000000000000000000000000000000000000a1")
	f.bob = is.user(t, "0x00000000000000000000000000000000000000b0")
	f.carol = is.user(t, "0x00000000000000000000000000000000000000c0")
	a, b, c := f.alice, f.bob, f.carol
	// Numbers carry the trailing zeros NUMERIC keeps from the settler's
	// arithmetic; the reads must print them normalized.
	f.addOrders(t,
		fixtureOrder{1000, c, "ETH-WB-100", false, 2, "0.50000", "1", "1", "0.5", "0.0100", 10, 0, ""},
		fixtureOrder{1001, a, "ETH-WB-100", true, 2, "0.5", "1", "1.0", "0.50", "0.000500", 10, 0, "alice-1"},
		fixtureOrder{1002, b, "ETH-WB-100", true, 2, "0.4", "1", "0", "", "0", 1, 0, "bob-1"},
		fixtureOrder{1003, a, "ETH-WB-100", false, 2, "0.9", "1", "0", "", "0", 1, 0, ""},
		fixtureOrder{1004, b, "ETH-WB-100", true, 1, "", "1", "0", "", "0", 12, 191, ""},
		fixtureOrder{1005, a, "ETH-WB-100", true, 2, "0.45", "1", "0", "", "0", 11, 192, "alice-2"},
		fixtureOrder{1006, b, "ETH-WB-100", true, 2, "0.3", "1", "0", "", "0", 0, 0, ""},
		fixtureOrder{1007, b, "ETH-WB-100", true, 2, "0.00015", "1", "0", "", "0", 99, 115, ""},
		fixtureOrder{1008, b, "ETH-WB-100", true, 2, "0.35", "1", "0", "", "0", 14, 0, ""},
		fixtureOrder{2000, a, "ETH-WB-101", true, 2, "0.2", "1", "0", "", "0", 1, 0, ""},
		fixtureOrder{2001, b, "ETH-WB-101", true, 2, "0.6", "1", "1", "0.6", "0.0006", 10, 0, ""},
		fixtureOrder{2002, c, "ETH-WB-101", false, 2, "0.55", "1", "1", "0.6", "0.012", 10, 0, ""},
		fixtureOrder{3000, c, "ETH-PC-100", false, 2, "0.000000003", "100000", "21000", "0.000000003", "0.00000000126", 13, 0, ""},
		fixtureOrder{3001, a, "ETH-PC-100", true, 2, "0.0000000030", "21000", "21000", "0.000000003", "0.000000000063", 10, 0, "pc-1"},
		fixtureOrder{3002, b, "ETH-PC-100", true, 2, "0.000000002", "50000", "0", "", "0", 1, 0, ""},
	)
	for i := range busyOrders {
		owner := a
		if i%2 == 1 {
			owner = b
		}
		f.addOrders(t, fixtureOrder{int64(10000 + 7*i), owner, "ETH-WB-200", true, 2, "0.1", "1", "0", "", "0", statusCycle[i%len(statusCycle)], 0, ""})
	}
	f.addTrades(t,
		fixtureTrade{5000, "ETH-WB-100", "0.500", "1", "18000000", true, 1001, 1000, a, c, "0.0005", "0.01"},
		fixtureTrade{5001, "ETH-WB-101", "0.6", "1", "", false, 2002, 2001, b, c, "0.0006", "0.012"},
		fixtureTrade{5002, "ETH-PC-100", "0.000000003", "21000", "", true, 3001, 3000, a, c, "0.000000000063", "0.00000000126"},
	)
	for i := range busyTrades {
		buyer := a
		if i%3 == 0 {
			buyer = b
		}
		f.addTrades(t, fixtureTrade{int64(6000 + 3*i), "ETH-PC-200", "0.000000002", "21000", "", i%2 == 0, 0, 0, buyer, c, "0.000000000042", "0.00000000084"})
	}
	f.exec(t, `INSERT INTO positions (account_id, instrument_id, market_id, slot, quantity, locked, average_price, expired, update_date) VALUES
		($1, 'ETH-WB-100', 2000000000100, 100, 0, 0, NULL, false, $4),
		($2, 'ETH-WB-100', 2000000000100, 100, 1, 1, 0.50, false, $4),
		($1, 'ETH-WB-101', 2000000000101, 101, 0, 0, NULL, true, $4),
		($3, 'ETH-WB-101', 2000000000101, 101, 1, 0, 0.6, true, $4),
		($1, 'ETH-PC-100', 1000000000100, 100, 17979000, 79000.000, NULL, false, $4),
		($2, 'ETH-PC-100', 1000000000100, 100, 21000, 0, 0.0000000030, false, $4),
		($1, 'ETH-PC-101', 1000000000101, 101, 18000000, 0, NULL, false, $4)`,
		c.pre, a.pre, b.pre, fixtureTime)
	return f
}

func (f *tradingFixture) exec(t testing.TB, sql string, args ...any) {
	t.Helper()
	if _, err := f.pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// marketOf returns the market id and slot of an instrument.
func marketOf(t testing.TB, instrument string) (int64, uint64) {
	t.Helper()
	fam, slot, err := topics.ParseInstrumentID(instrument)
	if err != nil {
		t.Fatal(err)
	}
	return topics.MarketID(fam, slot), slot
}

func (f *tradingFixture) addOrders(t testing.TB, orders ...fixtureOrder) {
	t.Helper()
	for _, o := range orders {
		market, slot := marketOf(t, o.instrument)
		created := fixtureTime.Add(time.Duration(o.id) * time.Millisecond)
		f.exec(t, `INSERT INTO orders (order_id, user_id, account_id, market_id, instrument_id, slot, side, order_type,
			price, quantity, fulfilled, average_trade_price, fees, status, error_code, client_order_id,
			reserved, spent, settled_quantity, create_date, update_date)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::numeric, $10::numeric, $11::numeric, $12::numeric, $13::numeric, $14,
			        $15, $16, 0, 0, $11::numeric, $17, $18)`,
			o.id, o.owner.id, o.owner.pre, market, o.instrument, slot, o.buy, o.orderType,
			null(o.price), o.quantity, o.fulfilled, null(o.avg), o.fees, o.status, nullInt(o.errorCode), null(o.clientID),
			created, created.Add(time.Second))
		f.orders = append(f.orders, o)
	}
}

func (f *tradingFixture) addTrades(t testing.TB, trades ...fixtureTrade) {
	t.Helper()
	for _, tr := range trades {
		market, slot := marketOf(t, tr.instrument)
		f.exec(t, `INSERT INTO trades (trade_id, market_id, instrument_id, slot, price, quantity, preconf_quantity, side,
			primary_sale, taker_order_id, maker_order_id, buyer_account_id, seller_account_id, buyer_fee, seller_fee, executed_at)
			VALUES ($1, $2, $3, $4, $5::numeric, $6::numeric, $7::numeric, $8, true, $9, $10, $11, $12, $13::numeric, $14::numeric, $15)`,
			tr.id, market, tr.instrument, slot, tr.price, tr.quantity, null(tr.preconf), tr.takerBuys,
			tr.taker, tr.maker, tr.buyer.pre, tr.seller.pre, tr.buyerFee, tr.sellerFee, fixtureTime.Add(time.Duration(tr.id)*time.Millisecond))
		f.trades = append(f.trades, tr)
	}
}

func null(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nullInt(v int) any {
	if v == 0 {
		return nil
	}
	return v
}

// orderIDs lists the ids of the fixture's orders that keep selects, in
// ascending order, reversed when desc.
func (f *tradingFixture) orderIDs(desc bool, keep func(fixtureOrder) bool) []int64 {
	ids := []int64{}
	for _, o := range f.orders {
		if keep(o) {
			ids = append(ids, o.id)
		}
	}
	slices.Sort(ids)
	if desc {
		slices.Reverse(ids)
	}
	return ids
}

// listing is the data of an order or trade list: only the ids and the
// fields that tell whose row it is.
type listing struct {
	Orders []struct {
		OrderID   int64  `json:"orderId"`
		AccountID *int64 `json:"accountId"`
		Status    int    `json:"status"`
	} `json:"orders"`
	Trades []struct {
		TrxID     int64  `json:"trxId"`
		AccountID *int64 `json:"accountId"`
	} `json:"trades"`
}

// ids GETs path as token ("" for none) and returns the order ids, or the
// trade ids of a trade list; the answer must be a success.
func (f *tradingFixture) ids(t *testing.T, token, path string) []int64 {
	t.Helper()
	r := getAs(t, f.h, token, path)
	if r.Status != 200 || !r.Body.Success {
		t.Fatalf("GET %s: status %d code %d %q", path, r.Status, r.Body.Code, r.Body.Message)
	}
	var l listing
	if err := json.Unmarshal(r.Body.Data, &l); err != nil {
		t.Fatalf("GET %s: %v: %s", path, err, r.Body.Data)
	}
	ids := []int64{}
	for _, o := range l.Orders {
		ids = append(ids, o.OrderID)
	}
	for _, tr := range l.Trades {
		ids = append(ids, tr.TrxID)
	}
	return ids
}

func TestPublicOrderFilters(t *testing.T) {
	f := newTradingFixture(t)
	every := func(int) bool { return true }
	cases := []struct {
		name, family, instrument, query string
		desc                            bool
		keep                            func(status int) bool
	}{
		{"defaults: every order, ascending", "wholeblock", "ETH-WB-100", "", false, every},
		{"onbook: live orders only", "wholeblock", "ETH-WB-100", "&onbook=true", false, topics.IsLiveOrderStatus},
		{"done: final orders only", "wholeblock", "ETH-WB-100", "&done=true", false, topics.IsFinalOrderStatus},
		{"neither, said explicitly", "wholeblock", "ETH-WB-100", "&onbook=false&done=false", false, every},
		{"descending", "wholeblock", "ETH-WB-100", "&asc=false", true, every},
		{"onbook descending", "wholeblock", "ETH-WB-100", "&onbook=1&asc=0", true, topics.IsLiveOrderStatus},
		{"another market of the family", "wholeblock", "ETH-WB-101", "", false, every},
		{"inclusion-preconf", "inclusion-preconf", "ETH-PC-100", "", false, every},
		{"inclusion-preconf onbook", "inclusion-preconf", "ETH-PC-100", "&onbook=true", false, topics.IsLiveOrderStatus},
		{"inclusion-preconf done", "inclusion-preconf", "ETH-PC-100", "&done=TRUE", false, topics.IsFinalOrderStatus},
		{"a market without orders", "wholeblock", "ETH-WB-999", "", false, every},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := "/api/v1/p/" + tc.family + "/orders?instrumentId=" + tc.instrument + tc.query
			want := f.orderIDs(tc.desc, func(o fixtureOrder) bool { return o.instrument == tc.instrument && tc.keep(o.status) })
			if got := f.ids(t, "", path); !slices.Equal(got, want) {
				t.Fatalf("GET %s: %v, want %v", path, got, want)
			}
		})
	}
	t.Run("onbook and done together are refused", func(t *testing.T) {
		r := getAs(t, f.h, "", "/api/v1/p/wholeblock/orders?instrumentId=ETH-WB-100&onbook=true&done=true")
		if r.Status != 400 || r.Body.Code != 1001 || !contains(r.Body.Message, "onbook") || !contains(r.Body.Message, "done") {
			t.Fatalf("status %d code %d %q", r.Status, r.Body.Code, r.Body.Message)
		}
	})
}

// pageThrough walks a list with startId from the first page to an empty
// one and returns every id it was given, in order.
func (f *tradingFixture) pageThrough(t *testing.T, token, base string, limit int, desc bool) []int64 {
	t.Helper()
	var all []int64
	path := fmt.Sprintf("%s&limit=%d", base, limit)
	for range 1000 {
		page := f.ids(t, token, path)
		if len(page) > limit {
			t.Fatalf("GET %s: %d rows, limit %d", path, len(page), limit)
		}
		if len(page) == 0 {
			return all
		}
		all = append(all, page...)
		next := page[len(page)-1] + 1
		if desc {
			next = page[len(page)-1] - 1
		}
		path = fmt.Sprintf("%s&limit=%d&startId=%d", base, limit, next)
	}
	t.Fatalf("GET %s: no end after 1000 pages", base)
	return nil
}

func TestOrderAndTradePaging(t *testing.T) {
	f := newTradingFixture(t)
	busy := func(keep func(int) bool) func(fixtureOrder) bool {
		return func(o fixtureOrder) bool { return o.instrument == "ETH-WB-200" && keep(o.status) }
	}
	mineWB := func(u testUser, keep func(int) bool) func(fixtureOrder) bool {
		return func(o fixtureOrder) bool {
			return o.owner.id == u.id && strings.HasPrefix(o.instrument, "ETH-WB-") && keep(o.status)
		}
	}
	all := func(int) bool { return true }
	cases := []struct {
		name, token, base string
		desc              bool
		keep              func(fixtureOrder) bool
	}{
		{"public ascending", "", "/api/v1/p/wholeblock/orders?instrumentId=ETH-WB-200", false, busy(all)},
		{"public descending", "", "/api/v1/p/wholeblock/orders?instrumentId=ETH-WB-200&asc=false", true, busy(all)},
		{"public onbook ascending", "", "/api/v1/p/wholeblock/orders?instrumentId=ETH-WB-200&onbook=true", false, busy(topics.IsLiveOrderStatus)},
		{"public done descending", "", "/api/v1/p/wholeblock/orders?instrumentId=ETH-WB-200&done=true&asc=false", true, busy(topics.IsFinalOrderStatus)},
		{"own ascending", f.alice.token, "/api/v1/user/wholeblock/orders?asc=true", false, mineWB(f.alice, all)},
		{"own descending", f.bob.token, "/api/v1/user/wholeblock/orders?asc=false", true, mineWB(f.bob, all)},
		{"own onbook descending", f.alice.token, "/api/v1/user/wholeblock/orders?onbook=true&asc=false", true, mineWB(f.alice, topics.IsLiveOrderStatus)},
		{"own done ascending", f.bob.token, "/api/v1/user/wholeblock/orders?done=true", false, mineWB(f.bob, topics.IsFinalOrderStatus)},
	}
	for _, tc := range cases {
		for _, limit := range []int{1, 7, 100} {
			t.Run(fmt.Sprintf("%s by %d", tc.name, limit), func(t *testing.T) {
				want := f.orderIDs(tc.desc, tc.keep)
				if len(want) < 10 {
					t.Fatalf("fixture has only %d rows for this case", len(want))
				}
				if got := f.pageThrough(t, tc.token, tc.base, limit, tc.desc); !slices.Equal(got, want) {
					t.Fatalf("pages gave %v\nwant %v", got, want)
				}
			})
		}
	}

	tradeIDs := func(keep func(fixtureTrade) bool) []int64 {
		var ids []int64
		for _, tr := range f.trades {
			if keep(tr) {
				ids = append(ids, tr.id)
			}
		}
		slices.Sort(ids)
		slices.Reverse(ids)
		return ids
	}
	tradeCases := []struct {
		name, token, base string
		keep              func(fixtureTrade) bool
	}{
		{"public trades", "", "/api/v1/p/inclusion-preconf/trades?instrumentId=ETH-PC-200",
			func(tr fixtureTrade) bool { return tr.instrument == "ETH-PC-200" }},
		{"seller's own trades", f.carol.token, "/api/v1/user/inclusion-preconf/trades?",
			func(tr fixtureTrade) bool { return strings.HasPrefix(tr.instrument, "ETH-PC-") }},
		{"buyer's own trades", f.alice.token, "/api/v1/user/inclusion-preconf/trades?",
			func(tr fixtureTrade) bool {
				return strings.HasPrefix(tr.instrument, "ETH-PC-") && tr.buyer.id == f.alice.id
			}},
	}
	for _, tc := range tradeCases {
		for _, limit := range []int{1, 4, 100} {
			t.Run(fmt.Sprintf("%s by %d", tc.name, limit), func(t *testing.T) {
				want := tradeIDs(tc.keep)
				if got := f.pageThrough(t, tc.token, tc.base, limit, true); !slices.Equal(got, want) {
					t.Fatalf("pages gave %v\nwant %v", got, want)
				}
			})
		}
	}
}

func TestTradingLimits(t *testing.T) {
	f := newTradingFixture(t)
	counts := []struct {
		path string
		want int
	}{
		{"/api/v1/p/wholeblock/orders?instrumentId=ETH-WB-200", 10},
		{"/api/v1/p/wholeblock/orders?instrumentId=ETH-WB-200&limit=100", 100},
		{"/api/v1/p/wholeblock/orders?instrumentId=ETH-WB-200&limit=1", 1},
		{"/api/v1/p/inclusion-preconf/trades?instrumentId=ETH-PC-200", 10},
		{"/api/v1/p/inclusion-preconf/trades?instrumentId=ETH-PC-200&limit=100", busyTrades},
	}
	for _, tc := range counts {
		if got := f.ids(t, "", tc.path); len(got) != tc.want {
			t.Errorf("GET %s: %d rows, want %d", tc.path, len(got), tc.want)
		}
	}
	if got := f.ids(t, f.alice.token, "/api/v1/user/wholeblock/orders"); len(got) != 10 {
		t.Errorf("own orders default limit: %d rows", len(got))
	}
	if got := f.ids(t, f.alice.token, "/api/v1/user/wholeblock/orders?limit=100"); len(got) != 64 {
		t.Errorf("own orders limit 100: %d rows, want alice's 60 busy + 4 others", len(got))
	}
}

// TestTradingRefusesBadInput: every malformed or out-of-range parameter is
// a 400 code 1001 whose message names the parameter.
func TestTradingRefusesBadInput(t *testing.T) {
	f := newTradingFixture(t)
	const wbOrders = "/api/v1/p/wholeblock/orders?instrumentId=ETH-WB-100"
	cases := []struct {
		name, token, path, param string
	}{
		{"orders without instrumentId", "", "/api/v1/p/wholeblock/orders", "instrumentId"},
		{"orders with an empty instrumentId", "", "/api/v1/p/wholeblock/orders?instrumentId=", "instrumentId"},
		{"trades without instrumentId", "", "/api/v1/p/inclusion-preconf/trades", "instrumentId"},
		{"preconf instrument on a wholeblock path", "", "/api/v1/p/wholeblock/orders?instrumentId=ETH-PC-100", "instrumentId"},
		{"wholeblock instrument on a preconf path", "", "/api/v1/p/inclusion-preconf/orders?instrumentId=ETH-WB-100", "instrumentId"},
		{"preconf trades on a wholeblock path", "", "/api/v1/p/wholeblock/trades?instrumentId=ETH-PC-100", "instrumentId"},
		{"preconf positions on a wholeblock path", "", "/api/v1/p/wholeblock/positions?instrumentId=ETH-PC-100", "instrumentId"},
		{"own orders of the other family", f.alice.token, "/api/v1/user/wholeblock/orders?instrumentId=ETH-PC-100", "instrumentId"},
		{"own trades of the other family", f.alice.token, "/api/v1/user/inclusion-preconf/trades?instrumentId=ETH-WB-100", "instrumentId"},
		{"instrument without slot", "", "/api/v1/p/wholeblock/orders?instrumentId=ETH-WB-", "instrumentId"},
		{"instrument with a leading zero", "", "/api/v1/p/wholeblock/orders?instrumentId=ETH-WB-0100", "instrumentId"},
		{"instrument in lower case", "", "/api/v1/p/wholeblock/orders?instrumentId=eth-wb-100", "instrumentId"},
		{"instrument with a sign", "", "/api/v1/p/wholeblock/orders?instrumentId=ETH-WB--1", "instrumentId"},
		{"instrument of no family", "", "/api/v1/p/wholeblock/orders?instrumentId=BTC-WB-1", "instrumentId"},
		{"instrument with a slot out of range", "", "/api/v1/p/wholeblock/orders?instrumentId=ETH-WB-99999999999999999999", "instrumentId"},
		{"limit 0", "", wbOrders + "&limit=0", "limit"},
		{"limit above the maximum", "", wbOrders + "&limit=101", "limit"},
		{"negative limit", "", wbOrders + "&limit=-5", "limit"},
		{"limit not a number", "", wbOrders + "&limit=ten", "limit"},
		{"trades limit above the maximum", "", "/api/v1/p/wholeblock/trades?instrumentId=ETH-WB-100&limit=1000", "limit"},
		{"positions limit above the maximum", "", "/api/v1/p/inclusion-preconf/positions?limit=101", "limit"},
		{"own trades limit 0", f.bob.token, "/api/v1/user/wholeblock/trades?limit=0", "limit"},
		{"negative startId", "", wbOrders + "&startId=-1", "startId"},
		{"startId not a number", "", wbOrders + "&startId=1e3", "startId"},
		{"startId beyond int64", "", wbOrders + "&startId=9223372036854775808", "startId"},
		{"trades startId not a number", "", "/api/v1/p/wholeblock/trades?instrumentId=ETH-WB-100&startId=x", "startId"},
		{"onbook not a boolean", "", wbOrders + "&onbook=yes", "onbook"},
		{"done not a boolean", "", wbOrders + "&done=2", "done"},
		{"asc not a boolean", "", wbOrders + "&asc=up", "asc"},
		{"own orders onbook not a boolean", f.alice.token, "/api/v1/user/inclusion-preconf/orders?onbook=maybe", "onbook"},
		{"own positions of the other family", f.alice.token, "/api/v1/user/wholeblock/positions?instrumentId=ETH-PC-100", "instrumentId"},
		{"own positions negative startSlot", f.alice.token, "/api/v1/user/wholeblock/positions?startSlot=-1", "startSlot"},
		{"own positions startSlot beyond a slot", f.alice.token, "/api/v1/user/inclusion-preconf/positions?startSlot=1000000000000", "startSlot"},
		{"own positions startSlot not a number", f.alice.token, "/api/v1/user/wholeblock/positions?startSlot=latest", "startSlot"},
		{"own positions limit above the maximum", f.alice.token, "/api/v1/user/wholeblock/positions?limit=101", "limit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := getAs(t, f.h, tc.token, tc.path)
			if r.Status != 400 || r.Body.Code != 1001 || !contains(r.Body.Message, tc.param) {
				t.Fatalf("status %d code %d %q, want 400 code 1001 naming %s", r.Status, r.Body.Code, r.Body.Message, tc.param)
			}
		})
	}
}

// TestPublicListingsHideOwners walks every object of the public listings
// of both families: no key may name an account, a user or a client's own
// order label.
func TestPublicListingsHideOwners(t *testing.T) {
	f := newTradingFixture(t)
	paths := []string{
		"/api/v1/p/wholeblock/orders?instrumentId=ETH-WB-100&limit=100",
		"/api/v1/p/wholeblock/trades?instrumentId=ETH-WB-100",
		"/api/v1/p/wholeblock/positions?limit=100",
		"/api/v1/p/wholeblock/positions?instrumentId=ETH-WB-100",
		"/api/v1/p/inclusion-preconf/orders?instrumentId=ETH-PC-100&limit=100",
		"/api/v1/p/inclusion-preconf/trades?instrumentId=ETH-PC-100",
		"/api/v1/p/inclusion-preconf/positions?limit=100",
	}
	forbidden := []string{"accountId", "userId", "buyerAccountId", "sellerAccountId", "takerAccountId", "makerAccountId", "fee"}
	for _, path := range paths {
		t.Run(path, func(t *testing.T) {
			r := getAs(t, f.h, "", path)
			var data map[string][]map[string]json.RawMessage
			if err := json.Unmarshal(r.Body.Data, &data); err != nil || r.Status != 200 {
				t.Fatalf("status %d: %s", r.Status, r.Body.Data)
			}
			n := 0
			for _, items := range data {
				for _, item := range items {
					n++
					for _, k := range forbidden {
						if _, ok := item[k]; ok {
							t.Fatalf("public item has %s: %v", k, item)
						}
					}
					if v, ok := item["clientOrderId"]; ok && string(v) != "null" {
						t.Fatalf("public order shows clientOrderId %s", v)
					}
				}
			}
			if n == 0 {
				t.Fatalf("nothing listed: %s", r.Body.Data)
			}
		})
	}
}

func TestOwnOrdersAndTrades(t *testing.T) {
	f := newTradingFixture(t)
	mine := func(u testUser, family string, keep func(fixtureOrder) bool) []int64 {
		return f.orderIDs(false, func(o fixtureOrder) bool {
			return o.owner.id == u.id && strings.HasPrefix(o.instrument, family) && keep(o)
		})
	}
	every := func(fixtureOrder) bool { return true }
	inst := func(id string) func(fixtureOrder) bool {
		return func(o fixtureOrder) bool { return o.instrument == id }
	}
	cases := []struct {
		name  string
		user  testUser
		path  string
		wantF func() []int64
	}{
		{"alice's whole-block orders", f.alice, "/api/v1/user/wholeblock/orders?limit=100", func() []int64 { return mine(f.alice, "ETH-WB-", every) }},
		{"bob's whole-block orders", f.bob, "/api/v1/user/wholeblock/orders?limit=100", func() []int64 { return mine(f.bob, "ETH-WB-", every) }},
		{"alice's orders of one market", f.alice, "/api/v1/user/wholeblock/orders?instrumentId=ETH-WB-100", func() []int64 { return []int64{1001, 1003, 1005} }},
		{"alice's open orders of one market", f.alice, "/api/v1/user/wholeblock/orders?instrumentId=ETH-WB-100&onbook=true", func() []int64 { return []int64{1003} }},
		{"alice's final orders of one market", f.alice, "/api/v1/user/wholeblock/orders?instrumentId=ETH-WB-100&done=true", func() []int64 { return []int64{1001, 1005} }},
		{"alice's preconf orders", f.alice, "/api/v1/user/inclusion-preconf/orders", func() []int64 { return mine(f.alice, "ETH-PC-", every) }},
		{"bob's preconf orders", f.bob, "/api/v1/user/inclusion-preconf/orders", func() []int64 { return mine(f.bob, "ETH-PC-", inst("ETH-PC-100")) }},
		{"carol's orders", f.carol, "/api/v1/user/wholeblock/orders", func() []int64 { return []int64{1000, 2002} }},
		{"alice's whole-block trades", f.alice, "/api/v1/user/wholeblock/trades", func() []int64 { return []int64{5000} }},
		{"bob's whole-block trades", f.bob, "/api/v1/user/wholeblock/trades", func() []int64 { return []int64{5001} }},
		{"carol's whole-block trades", f.carol, "/api/v1/user/wholeblock/trades", func() []int64 { return []int64{5001, 5000} }},
		{"carol's trades of one market", f.carol, "/api/v1/user/wholeblock/trades?instrumentId=ETH-WB-100", func() []int64 { return []int64{5000} }},
		{"alice's preconf trades of one market", f.alice, "/api/v1/user/inclusion-preconf/trades?instrumentId=ETH-PC-100", func() []int64 { return []int64{5002} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := getAs(t, f.h, tc.user.token, tc.path)
			var l listing
			if err := json.Unmarshal(r.Body.Data, &l); err != nil || r.Status != 200 {
				t.Fatalf("status %d %q: %s", r.Status, r.Body.Message, r.Body.Data)
			}
			got := []int64{}
			for _, o := range l.Orders {
				if o.AccountID == nil || *o.AccountID != tc.user.pre {
					t.Fatalf("order %d of account %v listed to user %d", o.OrderID, o.AccountID, tc.user.id)
				}
				got = append(got, o.OrderID)
			}
			for _, tr := range l.Trades {
				if tr.AccountID == nil || *tr.AccountID != tc.user.pre {
					t.Fatalf("trade %d of account %v listed to user %d", tr.TrxID, tr.AccountID, tc.user.id)
				}
				got = append(got, tr.TrxID)
			}
			if want := tc.wantF(); !slices.Equal(got, want) {
				t.Fatalf("got %v, want %v", got, want)
			}
		})
	}
	t.Run("a trade between two of the caller's accounts is listed once, as a buy", func(t *testing.T) {
		f.addTrades(t, fixtureTrade{5003, "ETH-WB-102", "0.7", "1", "", true, 0, 0, testUser{pre: f.alice.cur}, f.alice, "0.0007", "0.014"})
		r := getAs(t, f.h, f.alice.token, "/api/v1/user/wholeblock/trades?instrumentId=ETH-WB-102")
		want := `"trxId":5003,"side":true,`
		if r.Status != 200 || strings.Count(string(r.Body.Data), `"trxId":5003,`) != 1 || !contains(string(r.Body.Data), want) ||
			!contains(string(r.Body.Data), fmt.Sprintf(`"accountId":%d,`, f.alice.cur)) || !contains(string(r.Body.Data), `"fee":"0.0007"`) {
			t.Fatalf("status %d: %s", r.Status, r.Body.Data)
		}
	})
	t.Run("a user without trades sees none", func(t *testing.T) {
		if got := f.ids(t, f.bob.token, "/api/v1/user/inclusion-preconf/trades?instrumentId=ETH-PC-100"); len(got) != 0 {
			t.Fatalf("bob sees %v", got)
		}
	})
	for _, path := range []string{"/api/v1/user/wholeblock/orders", "/api/v1/user/wholeblock/trades",
		"/api/v1/user/inclusion-preconf/orders", "/api/v1/user/inclusion-preconf/trades"} {
		t.Run("no token on "+path, func(t *testing.T) {
			if r := getAs(t, f.h, "", path); r.Status != 401 || r.Body.Code != 1 {
				t.Fatalf("status %d code %d", r.Status, r.Body.Code)
			}
		})
	}
}

// TestOwnPositions: the caller's positions of a family across its
// accounts, emptied ones included, newest slot first, never another
// user's; a page holds whole slots and startSlot pages on.
func TestOwnPositions(t *testing.T) {
	f := newTradingFixture(t)
	type position struct {
		AccountID    int64   `json:"accountId"`
		MarketID     int64   `json:"marketId"`
		InstrumentID string  `json:"instrumentId"`
		Slot         int64   `json:"slot"`
		Quantity     string  `json:"quantity"`
		Available    string  `json:"available"`
		Locked       string  `json:"locked"`
		Expired      bool    `json:"expired"`
		AveragePrice *string `json:"averagePrice"`
		UpdateDate   int64   `json:"updateDate"`
	}
	read := func(t *testing.T, u testUser, path string) []position {
		t.Helper()
		r := getAs(t, f.h, u.token, path)
		var data struct{ Positions []position }
		if err := json.Unmarshal(r.Body.Data, &data); err != nil || r.Status != 200 || data.Positions == nil {
			t.Fatalf("GET %s: status %d %q: %s", path, r.Status, r.Body.Message, r.Body.Data)
		}
		return data.Positions
	}
	instruments := func(ps []position) []string {
		out := []string{}
		for _, p := range ps {
			out = append(out, p.InstrumentID)
		}
		return out
	}
	cases := []struct {
		name string
		user testUser
		path string
		want []string
	}{
		{"carol's whole-block positions, emptied ones too", f.carol, "/api/v1/user/wholeblock/positions", []string{"ETH-WB-101", "ETH-WB-100"}},
		{"carol's preconf positions", f.carol, "/api/v1/user/inclusion-preconf/positions", []string{"ETH-PC-101", "ETH-PC-100"}},
		{"carol's first page", f.carol, "/api/v1/user/inclusion-preconf/positions?limit=1", []string{"ETH-PC-101"}},
		{"carol's next page", f.carol, "/api/v1/user/inclusion-preconf/positions?limit=1&startSlot=100", []string{"ETH-PC-100"}},
		{"carol's positions of one market", f.carol, "/api/v1/user/wholeblock/positions?instrumentId=ETH-WB-100", []string{"ETH-WB-100"}},
		{"bob holds no preconf", f.bob, "/api/v1/user/inclusion-preconf/positions", []string{}},
		{"bob's whole block", f.bob, "/api/v1/user/wholeblock/positions", []string{"ETH-WB-101"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ps := read(t, tc.user, tc.path)
			if got := instruments(ps); !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for _, p := range ps {
				if p.AccountID != tc.user.pre {
					t.Fatalf("position of account %d listed to user %d", p.AccountID, tc.user.id)
				}
			}
		})
	}
	t.Run("the fields of one position", func(t *testing.T) {
		ps := read(t, f.alice, "/api/v1/user/wholeblock/positions")
		want := position{AccountID: f.alice.pre, MarketID: 2000000000100, InstrumentID: "ETH-WB-100", Slot: 100,
			Quantity: "1", Available: "0", Locked: "1", UpdateDate: fixtureTime.UnixMilli()}
		if len(ps) != 1 || ps[0].AveragePrice == nil || *ps[0].AveragePrice != "0.5" {
			t.Fatalf("got %+v", ps)
		}
		ps[0].AveragePrice = nil
		if ps[0] != want {
			t.Fatalf("got %+v, want %+v", ps[0], want)
		}
	})
	t.Run("a page holds whole slots", func(t *testing.T) {
		f.exec(t, `INSERT INTO positions (account_id, instrument_id, market_id, slot, quantity) VALUES
			($1, 'ETH-WB-100', 2000000000100, 100, 0), ($1, 'ETH-WB-99', 2000000000099, 99, 1)`, f.alice.cur)
		ps := read(t, f.alice, "/api/v1/user/wholeblock/positions?limit=1")
		accounts := []int64{}
		for _, p := range ps {
			accounts = append(accounts, p.AccountID)
		}
		if got := instruments(ps); !slices.Equal(got, []string{"ETH-WB-100", "ETH-WB-100"}) ||
			!slices.Equal(accounts, []int64{min(f.alice.pre, f.alice.cur), max(f.alice.pre, f.alice.cur)}) {
			t.Fatalf("got %+v", ps)
		}
		if got := instruments(read(t, f.alice, "/api/v1/user/wholeblock/positions?limit=1&startSlot=99")); !slices.Equal(got, []string{"ETH-WB-99"}) {
			t.Fatalf("next page: %v", got)
		}
	})
	for _, path := range []string{"/api/v1/user/wholeblock/positions", "/api/v1/user/inclusion-preconf/positions"} {
		t.Run("no token on "+path, func(t *testing.T) {
			if r := getAs(t, f.h, "", path); r.Status != 401 || r.Body.Code != 1 {
				t.Fatalf("status %d code %d", r.Status, r.Body.Code)
			}
		})
	}
}

// TestTradingViews compares whole answers: decimals printed exactly and
// without the trailing zeros NUMERIC keeps, dates in epoch milliseconds,
// the caller's side, order and fee in own trades, and preconfQuantity on
// whole-block trades only.
func TestTradingViews(t *testing.T) {
	f := newTradingFixture(t)
	ms := func(id int64, plus time.Duration) int64 {
		return fixtureTime.Add(time.Duration(id)*time.Millisecond + plus).UnixMilli()
	}
	pos := fixtureTime.UnixMilli()
	cases := []struct {
		name, token, path, want string
	}{
		{"public order", "", "/api/v1/p/wholeblock/orders?instrumentId=ETH-WB-100&startId=1001&limit=1",
			fmt.Sprintf(`{"orders":[{"orderId":1001,"marketId":2000000000100,"instrumentId":"ETH-WB-100","side":true,"orderType":2,`+
				`"quantity":"1","fulfilled":"1","price":"0.5","fees":"0.0005","status":10,"errorCode":null,"clientOrderId":null,`+
				`"passive":false,"createDate":%d,"source":1,"updateDate":%d}]}`, ms(1001, 0), ms(1001, time.Second))},
		{"public market order without price, with its error code", "", "/api/v1/p/wholeblock/orders?instrumentId=ETH-WB-100&startId=1004&limit=1",
			fmt.Sprintf(`{"orders":[{"orderId":1004,"marketId":2000000000100,"instrumentId":"ETH-WB-100","side":true,"orderType":1,`+
				`"quantity":"1","fulfilled":"0","price":null,"fees":"0","status":12,"errorCode":191,"clientOrderId":null,`+
				`"passive":false,"createDate":%d,"source":1,"updateDate":%d}]}`, ms(1004, 0), ms(1004, time.Second))},
		{"own preconf order", f.alice.token, "/api/v1/user/inclusion-preconf/orders",
			fmt.Sprintf(`{"orders":[{"orderId":3001,"marketId":1000000000100,"instrumentId":"ETH-PC-100","side":true,"orderType":2,`+
				`"quantity":"21000","fulfilled":"21000","price":"0.000000003","fees":"0.000000000063","status":10,"errorCode":null,"clientOrderId":"pc-1",`+
				`"passive":false,"createDate":%d,"source":1,"updateDate":%d,"accountId":%d,"averageTradePrice":"0.000000003"}]}`,
				ms(3001, 0), ms(3001, time.Second), f.alice.pre)},
		{"public whole-block trade", "", "/api/v1/p/wholeblock/trades?instrumentId=ETH-WB-100",
			fmt.Sprintf(`{"trades":[{"instrumentId":"ETH-WB-100","trxId":5000,"side":true,"price":"0.5","quantity":"1","preconfQuantity":"18000000","date":%d}]}`, ms(5000, 0))},
		{"public sell-taken trade without preconf", "", "/api/v1/p/wholeblock/trades?instrumentId=ETH-WB-101",
			fmt.Sprintf(`{"trades":[{"instrumentId":"ETH-WB-101","trxId":5001,"side":false,"price":"0.6","quantity":"1","preconfQuantity":"0","date":%d}]}`, ms(5001, 0))},
		{"public preconf trade", "", "/api/v1/p/inclusion-preconf/trades?instrumentId=ETH-PC-100",
			fmt.Sprintf(`{"trades":[{"instrumentId":"ETH-PC-100","trxId":5002,"side":true,"price":"0.000000003","quantity":"21000","date":%d}]}`, ms(5002, 0))},
		{"own trade of a maker buyer", f.bob.token, "/api/v1/user/wholeblock/trades",
			fmt.Sprintf(`{"trades":[{"instrumentId":"ETH-WB-101","trxId":5001,"side":true,"price":"0.6","quantity":"1","preconfQuantity":"0","date":%d,`+
				`"accountId":%d,"orderId":2001,"taker":false,"fee":"0.0006"}]}`, ms(5001, 0), f.bob.pre)},
		{"own trades of the seller", f.carol.token, "/api/v1/user/wholeblock/trades",
			fmt.Sprintf(`{"trades":[{"instrumentId":"ETH-WB-101","trxId":5001,"side":false,"price":"0.6","quantity":"1","preconfQuantity":"0","date":%d,`+
				`"accountId":%d,"orderId":2002,"taker":true,"fee":"0.012"},`+
				`{"instrumentId":"ETH-WB-100","trxId":5000,"side":false,"price":"0.5","quantity":"1","preconfQuantity":"18000000","date":%d,`+
				`"accountId":%d,"orderId":1000,"taker":false,"fee":"0.01"}]}`, ms(5001, 0), f.carol.pre, ms(5000, 0), f.carol.pre)},
		{"own preconf trade of a taker buyer", f.alice.token, "/api/v1/user/inclusion-preconf/trades?instrumentId=ETH-PC-100",
			fmt.Sprintf(`{"trades":[{"instrumentId":"ETH-PC-100","trxId":5002,"side":true,"price":"0.000000003","quantity":"21000","date":%d,`+
				`"accountId":%d,"orderId":3001,"taker":true,"fee":"0.000000000063"}]}`, ms(5002, 0), f.alice.pre)},
		{"whole-block positions, newest market first", "", "/api/v1/p/wholeblock/positions",
			fmt.Sprintf(`{"positions":[{"instrumentId":"ETH-WB-101","slot":101,"quantity":"1","available":"1","locked":"0","expired":true,"averagePrice":"0.6","updateDate":%d},`+
				`{"instrumentId":"ETH-WB-100","slot":100,"quantity":"1","available":"0","locked":"1","expired":false,"averagePrice":"0.5","updateDate":%d}]}`, pos, pos)},
		{"preconf positions of one market, largest first", "", "/api/v1/p/inclusion-preconf/positions?instrumentId=ETH-PC-100",
			fmt.Sprintf(`{"positions":[{"instrumentId":"ETH-PC-100","slot":100,"quantity":"17979000","available":"17900000","locked":"79000","expired":false,"averagePrice":null,"updateDate":%d},`+
				`{"instrumentId":"ETH-PC-100","slot":100,"quantity":"21000","available":"21000","locked":"0","expired":false,"averagePrice":"0.000000003","updateDate":%d}]}`, pos, pos)},
		{"preconf positions limited", "", "/api/v1/p/inclusion-preconf/positions?limit=1",
			fmt.Sprintf(`{"positions":[{"instrumentId":"ETH-PC-101","slot":101,"quantity":"18000000","available":"18000000","locked":"0","expired":false,"averagePrice":null,"updateDate":%d}]}`, pos)},
		{"positions of a market nobody holds", "", "/api/v1/p/wholeblock/positions?instrumentId=ETH-WB-7", `{"positions":[]}`},
		{"orders of a market without any", "", "/api/v1/p/inclusion-preconf/orders?instrumentId=ETH-PC-7", `{"orders":[]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := getAs(t, f.h, tc.token, tc.path)
			if r.Status != 200 || string(r.Body.Data) != tc.want {
				t.Fatalf("status %d\n got %s\nwant %s", r.Status, r.Body.Data, tc.want)
			}
		})
	}
}

func TestTradingAnswers503WhilePostgresDown(t *testing.T) {
	var down error
	s, _ := newService(t, "dev", "", func() error { return down })
	down = fmt.Errorf("connection refused")
	for _, path := range []string{"/api/v1/p/wholeblock/orders?instrumentId=ETH-WB-1", "/api/v1/p/inclusion-preconf/trades?instrumentId=ETH-PC-1",
		"/api/v1/p/wholeblock/positions"} {
		if r := get(t, s.Handler(), path); r.Status != 503 || r.Body.Code != 21 {
			t.Errorf("GET %s: status %d code %d", path, r.Status, r.Body.Code)
		}
	}
}

// BenchmarkPublicReads measures the public orders read against the
// tokens read (a cached, pre-encoded answer) in the same run, each with
// 4 × GOMAXPROCS concurrent clients of the in-process handler:
//
//	go test -run '^$' -bench PublicReads ./query-api/
//
// It reports requests per second of each and, for orders, the ratio to
// tokens.
func BenchmarkPublicReads(b *testing.B) {
	f := newTradingFixture(b)
	var tokensRate float64
	reads := []struct{ name, path string }{
		{"tokens", "/api/v1/p/tokens"},
		{"orders", "/api/v1/p/wholeblock/orders?instrumentId=ETH-WB-200"},
		{"orders_onbook_desc", "/api/v1/p/wholeblock/orders?instrumentId=ETH-WB-200&onbook=true&asc=false"},
	}
	for _, rd := range reads {
		b.Run(rd.name, func(b *testing.B) {
			if r := getAs(b, f.h, "", rd.path); r.Status != 200 {
				b.Fatalf("GET %s: %d", rd.path, r.Status)
			}
			b.ReportAllocs()
			b.SetParallelism(4) // 4 × GOMAXPROCS concurrent clients
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					rec := httptest.NewRecorder()
					f.h.ServeHTTP(rec, httptest.NewRequest("GET", rd.path, nil))
					if rec.Code != 200 {
						b.Errorf("GET %s: %d", rd.path, rec.Code)
						return
					}
				}
			})
			rate := float64(b.N) / b.Elapsed().Seconds()
			b.ReportMetric(rate, "req/s")
			if rd.name == "tokens" {
				tokensRate = rate
			} else if tokensRate > 0 {
				b.ReportMetric(rate/tokensRate, "x-tokens")
			}
		})
	}
}
