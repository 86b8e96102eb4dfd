package live

import (
	"io"
	"maps"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/platform/metricstest"
	"blockspace.exchange/query-api/internal/markets"
	"blockspace.exchange/topics"
)

const wb7 = "ETH-WB-7"

// Every malformed or refused message is answered with an error event
// whose code is the documented one and whose msg names the problem; the
// connection stays usable.
func TestErrorsAreAnsweredWithCodes(t *testing.T) {
	h := newHarness(t, Config{}, nil)
	h.open(7, topics.WholeBlock)
	expired := h.token(5, time.Now().Add(-2*time.Minute))
	sub := func(args ...map[string]any) map[string]any { return map[string]any{"op": "subscribe", "args": args} }
	cases := []struct {
		name string
		send any
		code int
		has  string
	}{
		{"not JSON", "{op:", topics.CodeValidation, "not a JSON object"},
		{"JSON array", "[1]", topics.CodeValidation, "not a JSON object"},
		{"trailing data", `{"op":"query","args":[{"queryType":"currentSlot"}]} {}`, topics.CodeValidation, "after its JSON"},
		{"no op", map[string]any{"args": []any{}}, topics.CodeValidation, "op is required"},
		{"unknown op", map[string]any{"op": "trade", "args": []any{map[string]any{}}}, topics.CodeValidation, `op "trade"`},
		{"no args", map[string]any{"op": "subscribe"}, topics.CodeValidation, "args must be a non-empty array"},
		{"arg not object", map[string]any{"op": "subscribe", "args": []any{"x"}}, topics.CodeValidation, "args[0]"},
		{"unknown channel", sub(map[string]any{"channel": "klines", "marketType": "wholeBlock"}), topics.CodeValidation, `channel "klines"`},
		{"no marketType", sub(map[string]any{"channel": "orderBookUpdate"}), topics.CodeValidation, "needs marketType"},
		{"bad marketType", sub(map[string]any{"channel": "orderBookUpdate", "marketType": "spot"}), topics.CodeValidation, `marketType "spot"`},
		{"bad instrument", sub(map[string]any{"channel": "orderBookUpdate", "marketType": "wholeBlock", "instrumentId": "BTC-1"}), topics.CodeValidation, `instrumentId "BTC-1"`},
		{"family mismatch", sub(map[string]any{"channel": "orderBookUpdate", "marketType": "inclusionPreconf", "instrumentId": wb7}), topics.CodeValidation, "is not a inclusionPreconf market"},
		{"unknown market", sub(map[string]any{"channel": "orderBookUpdate", "marketType": "wholeBlock", "instrumentId": "ETH-WB-8"}), topics.CodeMarketNotOpen, "no market ETH-WB-8"},
		{"private before login", sub(map[string]any{"channel": "accountOrderUpdate", "marketType": "wholeBlock"}), httpx.CodeAuth, "log in first"},
		{"balance takes no market", sub(map[string]any{"channel": "accountBalanceUpdate", "marketType": "wholeBlock"}), topics.CodeValidation, "takes no marketType"},
		{"unsubscribe unknown", map[string]any{"op": "unsubscribe", "args": []any{map[string]any{"channel": "recentTrade", "marketType": "wholeBlock"}}}, topics.CodeValidation, "not subscribed"},
		{"query unknown type", map[string]any{"op": "query", "args": []any{map[string]any{"queryType": "candles"}}}, topics.CodeValidation, `queryType "candles"`},
		{"query book without instrument", map[string]any{"op": "query", "args": []any{map[string]any{"queryType": "orderBook"}}}, topics.CodeValidation, "needs instrumentId"},
		{"query markets with instrument", map[string]any{"op": "query", "args": []any{map[string]any{"queryType": "markets", "marketType": "wholeBlock", "instrumentId": wb7}}}, topics.CodeValidation, "takes no instrumentId"},
		{"query unknown market", map[string]any{"op": "query", "args": []any{map[string]any{"queryType": "orderBook", "instrumentId": "ETH-PC-9"}}}, topics.CodeMarketNotOpen, "no market ETH-PC-9"},
		{"query limit out of range", map[string]any{"op": "query", "args": []any{map[string]any{"queryType": "recentTrades", "instrumentId": wb7, "limit": 500}}}, topics.CodeValidation, "limit 500"},
		{"private query before login", map[string]any{"op": "query", "args": []any{map[string]any{"queryType": "openOrders"}}}, httpx.CodeAuth, "log in first"},
		{"login without token", map[string]any{"op": "login", "args": []any{map[string]any{}}}, topics.CodeValidation, "accessToken is required"},
		{"login garbage token", map[string]any{"op": "login", "args": []any{map[string]any{"accessToken": "abc"}}}, httpx.CodeAuth, "access token is invalid"},
		{"login expired token", map[string]any{"op": "login", "args": []any{map[string]any{"accessToken": expired}}}, httpx.CodeAuth, "expired"},
		{"too many args", map[string]any{"op": "query", "args": make([]any, 21)}, topics.CodeValidation, "at most 20"},
	}
	c := h.dial(nil)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			c.send(tc.send)
			m := c.expect("error", tc.code)
			if !strings.Contains(m.Msg, tc.has) {
				t.Fatalf("msg %q does not contain %q", m.Msg, tc.has)
			}
		})
	}
	c.t = t
	if err := c.conn.WriteMessage(websocket.BinaryMessage, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if m := c.expect("error", topics.CodeValidation); !strings.Contains(m.Msg, "not binary") {
		t.Fatalf("binary message: %s", m.raw)
	}
	if got := c.upTo(); len(got) != 0 {
		t.Fatalf("unexpected messages: %v", got)
	}
}

func TestUpgradeRefusals(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := httpx.NewMetrics(reg, "query-api")
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessWith(t, Config{MaxSockets: 1}, Deps{Metrics: m})
	resp, err := http.Get(h.http.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(body), `"code":1001`) {
		t.Fatalf("plain GET: %d %s", resp.StatusCode, body)
	}
	_, resp, err = websocket.DefaultDialer.Dial(h.url, http.Header{"Authorization": {"Bearer nope"}})
	if err == nil || resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != "Bearer" {
		t.Fatalf("bad bearer header: %v %v", err, resp)
	}
	c := h.dial(http.Header{"Authorization": {"Bearer " + h.token(3, time.Now().Add(time.Hour))}})
	c.subscribe(map[string]string{"channel": "accountBalanceUpdate"})
	c.expect("subscribe", 0) // logged in by the header
	_, resp, err = websocket.DefaultDialer.Dial(h.url, nil)
	if err == nil || resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("socket over the limit: %v %v", err, resp)
	}
	// Only the 429 is a refusal: the 400 and the 401 are the client's.
	got := metricstest.NonZero(metricstest.Prefixed(metricstest.Gather(t, reg), "http_refusals_total"))
	want := map[string]float64{`http_refusals_total{reason="in_flight",service="query-api",status="429"}`: 1}
	if !maps.Equal(got, want) {
		t.Fatalf("refusals counted: %v, want %v", got, want)
	}
}

// A subscriber gets the book snapshot, then updates with consecutive
// sequence numbers; after unsubscribe nothing more; queries answer the
// model's state.
func TestSubscribeQueryUnsubscribe(t *testing.T) {
	h := newHarness(t, Config{}, nil)
	h.open(7, topics.WholeBlock)
	c := h.dial(nil)

	c.send("ping")
	if m := c.next(); m.raw != "pong" {
		t.Fatalf("ping answered %q", m.raw)
	}
	c.send(map[string]any{"op": "query", "args": []any{map[string]string{"queryType": "markets", "marketType": "wholeBlock"}}})
	if got := decodeP[[]markets.WholeBlockMarket](t, c.next()); len(got) != 1 || got[0].InstrumentID != wb7 || got[0].Status != 1 {
		t.Fatalf("markets query: %+v", got)
	}
	c.send(map[string]any{"op": "query", "args": []any{map[string]string{"queryType": "currentSlot"}}})
	if cs := decodeP[CurrentSlot](t, c.next()); cs.Slot < 49 || cs.Slot > 51 || cs.SlotLength != 2000 || cs.NextSlotTime-cs.SlotTime != 2000 {
		t.Fatalf("currentSlot: %+v", cs)
	}

	h.apply(topics.TypeOrderAccepted, orderEvent(1, 100, wb7, false, "2.5", "1", "0", topics.OrderStatusOnBook))
	c.subscribe(map[string]string{"channel": "orderBookUpdate", "marketType": "wholeBlock", "instrumentId": wb7},
		map[string]string{"channel": "recentTrade", "marketType": "wholeBlock"})
	if a := c.expect("subscribe", 0); a.Arg == nil || a.Arg.InstrumentID != wb7 || a.Arg.Channel != ChannelBook {
		t.Fatalf("ack: %s", a.raw)
	}
	snap := c.next()
	book := decodeP[markets.Book](t, snap)
	if snap.E != ChannelBook || snap.A != "snapshot" || snap.S != wb7 || len(book.Asks) != 1 || book.Asks[0].Price != "2.5" {
		t.Fatalf("snapshot: %s", snap.raw)
	}
	c.expect("subscribe", 0)

	h.apply(topics.TypeOrderAccepted, orderEvent(2, 101, wb7, true, "2.1", "1", "0", topics.OrderStatusOnBook))
	h.apply(topics.TypeTradeExecuted, topics.Fill{TradeID: 9, InstrumentID: wb7, Slot: 7, Price: "2.5", Quantity: "1", Side: true})
	got := c.upTo()
	if len(got) != 2 || got[0].E != ChannelBook || got[1].E != ChannelTrade {
		t.Fatalf("pushes: %v", got)
	}
	if !strings.Contains(got[0].raw, `"asks":[]`) {
		t.Fatalf("an unchanged side must be an empty array, not null: %s", got[0].raw)
	}
	up := decodeP[markets.BookUpdate](t, got[0])
	if up.Seq != book.Seq+1 || len(up.Bids) != 1 || up.Bids[0] != (markets.Level{Price: "2.1", Quantity: "1", Orders: 1}) {
		t.Fatalf("update: %s after seq %d", got[0].raw, book.Seq)
	}
	if tr := decodeP[markets.Trade](t, got[1]); tr.TrxID != 9 || tr.Price != "2.5" || !tr.Side || got[1].A != "trade" {
		t.Fatalf("trade: %s", got[1].raw)
	}
	c.send(map[string]any{"op": "query", "args": []any{map[string]any{"queryType": "recentTrades", "instrumentId": wb7, "limit": 5}}})
	if tr := decodeP[[]markets.Trade](t, c.next()); len(tr) != 1 || tr[0].TrxID != 9 {
		t.Fatalf("recentTrades: %+v", tr)
	}
	c.send(map[string]any{"op": "query", "args": []any{map[string]any{"queryType": "orderBook", "instrumentId": wb7}}})
	if q := decodeP[markets.Book](t, c.next()); q.Seq != up.Seq || len(q.Bids) != 1 || len(q.Asks) != 1 {
		t.Fatalf("orderBook query: %+v", q)
	}

	c.send(map[string]any{"op": "unsubscribe", "args": []any{map[string]string{"channel": "orderBookUpdate", "marketType": "wholeBlock", "instrumentId": wb7}}})
	c.expect("unsubscribe", 0)
	h.apply(topics.TypeOrderCancelled, orderEvent(2, 101, wb7, true, "2.1", "1", "0", topics.OrderStatusCancelledByUser))
	if got := c.upTo(); len(got) != 0 {
		t.Fatalf("pushes after unsubscribe: %v", got)
	}
}

// Market lifecycle pushes: open, then trading closed; the ticker snapshot
// comes with the subscription.
func TestMarketAndTickerChannels(t *testing.T) {
	h := newHarness(t, Config{}, nil)
	c := h.dial(nil)
	c.subscribe(map[string]string{"channel": "marketUpdate", "marketType": "inclusionPreconf"})
	c.expect("subscribe", 0)
	h.open(9, topics.InclusionPreconf)
	m := c.next()
	if mk := decodeP[markets.InclusionPreconfMarket](t, m); m.E != ChannelMarket || m.A != "open" || m.S != "ETH-PC-9" || mk.TotalPreconf != 18_000_000 {
		t.Fatalf("open push: %s", m.raw)
	}
	c.subscribe(map[string]string{"channel": "tickerUpdate", "marketType": "inclusionPreconf"})
	c.expect("subscribe", 0)
	if tk := c.next(); tk.A != "snapshot" || tk.S != "ETH-PC-9" {
		t.Fatalf("ticker snapshot: %s", tk.raw)
	}
	h.apply(topics.TypeMarketStatus, topics.MarketStatus{InstrumentID: "ETH-PC-9", Slot: 9, Status: topics.MarketStatusTradingClosed,
		AvailablePreconf: 18_000_000, TotalPreconf: 18_000_000})
	got := c.upTo()
	if len(got) != 2 || got[0].A != "tradingClosed" || got[1].E != ChannelTicker {
		t.Fatalf("after trading closed: %v", got)
	}
	if tk := decodeP[markets.Ticker](t, got[1]); tk.Status != 2 {
		t.Fatalf("ticker status: %s", got[1].raw)
	}
}

// One user never sees another's order updates; logging in as another user
// on the same socket ends the first user's subscriptions.
func TestPrivateChannelIsolation(t *testing.T) {
	h := newHarness(t, Config{}, nil)
	h.open(7, topics.WholeBlock)
	alice, bob, anon := h.dial(nil), h.dial(nil), h.dial(nil)
	if m := alice.login(h.token(1, time.Now().Add(time.Hour))); m.User != 1 {
		t.Fatalf("login: %s", m.raw)
	}
	bob.login(h.token(2, time.Now().Add(time.Hour)))
	for _, c := range []*client{alice, bob} {
		c.subscribe(map[string]string{"channel": "accountOrderUpdate"})
		c.expect("subscribe", 0)
	}
	anon.subscribe(map[string]string{"channel": "orderBookUpdate", "marketType": "wholeBlock"})
	anon.expect("subscribe", 0)
	anon.next() // snapshot

	h.apply(topics.TypeOrderAccepted, orderEvent(1, 100, wb7, false, "2.5", "1", "0", topics.OrderStatusOnBook))
	h.apply(topics.TypeOrderAccepted, orderEvent(2, 101, wb7, true, "2.1", "1", "0", topics.OrderStatusOnBook))
	h.apply(topics.TypeCancelRejected, topics.CancelRejected{UserID: 2, AccountID: 20, InstrumentID: wb7, OrderID: 55, Code: 108})
	for _, tc := range []struct {
		c      *client
		orders []int64
	}{{alice, []int64{100}}, {bob, []int64{101, 55}}} {
		got := tc.c.upTo()
		if len(got) != len(tc.orders) {
			t.Fatalf("got %v, want orders %v", got, tc.orders)
		}
		for i, m := range got {
			o := decodeP[markets.Order](t, m)
			if m.E != ChannelOrders || o.OrderID != tc.orders[i] {
				t.Fatalf("push %s, want order %d", m.raw, tc.orders[i])
			}
		}
	}
	if got := anon.upTo(); len(got) != 2 || got[0].E != ChannelBook || got[1].E != ChannelBook {
		t.Fatalf("anonymous socket: %v", got)
	}
	alice.send(map[string]any{"op": "query", "args": []any{map[string]string{"queryType": "openOrders", "marketType": "wholeBlock"}}})
	if o := decodeP[[]markets.Order](t, alice.next()); len(o) != 1 || o[0].OrderID != 100 {
		t.Fatalf("alice's open orders: %+v", o)
	}

	// Alice's socket logs in as user 3: her subscription ends with it.
	alice.login(h.token(3, time.Now().Add(time.Hour)))
	h.apply(topics.TypeOrderAccepted, orderEvent(1, 102, wb7, false, "2.6", "1", "0", topics.OrderStatusOnBook))
	if got := alice.upTo(); len(got) != 0 {
		t.Fatalf("after switching user: %v", got)
	}
}

// A client that reads late gets everything that waited in its queue, in
// order: the writer sends a long queue in bursts, and each burst writes
// every message it takes.
func TestBacklogIsWrittenWhole(t *testing.T) {
	h := newHarness(t, Config{QueueLen: 1024}, nil)
	h.open(7, topics.WholeBlock)
	c := h.dial(nil)
	c.subscribe(map[string]string{"channel": "recentTrade", "marketType": "wholeBlock"})
	c.expect("subscribe", 0)
	// 600 messages of 32 KiB (19 MB): far more than the connection buffers,
	// so most of them wait in the socket's queue until the client reads.
	const n = 600
	pad := strings.Repeat("x", 32<<10)
	for i := range n {
		h.srv.hub.publish(ChannelTrade, topics.WholeBlock, wb7,
			encode(push{Channel: ChannelTrade, Instrument: wb7, Action: actionTrade, Payload: map[string]any{"n": i, "pad": pad}}))
	}
	if st := h.srv.hub.Stats(); st.Dropped != 0 {
		t.Fatalf("the queue overflowed: %+v", st)
	}
	for i := range n {
		if got := decodeP[struct{ N int }](t, c.next()); got.N != i {
			t.Fatalf("message %d, want %d: the ones between were lost", got.N, i)
		}
	}
}

// A client that stops reading is disconnected when its queue overflows;
// the others get every message.
func TestSlowClientIsDisconnected(t *testing.T) {
	h := newHarness(t, Config{QueueLen: 16}, nil)
	h.open(7, topics.WholeBlock)
	slow, fast := h.dial(nil), h.dial(nil)
	for _, c := range []*client{slow, fast} {
		c.subscribe(map[string]string{"channel": "recentTrade", "marketType": "wholeBlock"})
		c.expect("subscribe", 0)
	}
	const n = 3000
	payload := strings.Repeat("x", 8<<10) // 24 MB in all: more than any socket buffer
	var read atomic.Int64
	received := make(chan int)
	go func() {
		count := 0
		for count < n {
			_ = fast.conn.SetReadDeadline(time.Now().Add(20 * time.Second))
			if _, _, err := fast.conn.ReadMessage(); err != nil {
				break
			}
			count++
			read.Store(int64(count))
		}
		received <- count
	}()
	msg := encode(push{Channel: ChannelTrade, Instrument: wb7, Action: actionTrade, Payload: payload})
	for i := range n {
		// The fast reader is never more than 8 messages behind; the slow
		// one never reads.
		for int64(i)-read.Load() > 8 {
			select {
			case got := <-received:
				t.Fatalf("fast client stopped reading at %d of %d", got, n)
			case <-time.After(50 * time.Microsecond):
			}
		}
		h.srv.hub.publish(ChannelTrade, topics.WholeBlock, wb7, msg)
	}
	if got := <-received; got != n {
		t.Fatalf("fast client got %d of %d", got, n)
	}
	if st := h.srv.hub.Stats(); st.Dropped == 0 {
		t.Fatalf("slow client never overflowed: %+v", st)
	}
	// The slow client finds the close frame after what was queued.
	var err error
	for err == nil {
		_ = slow.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, _, err = slow.conn.ReadMessage()
	}
	if !websocket.IsCloseError(err, websocket.ClosePolicyViolation) {
		t.Fatalf("slow client ended with %v, want close 1008", err)
	}
}

// An access token that expires ends the private subscriptions at its exp
// by the server's clock, which the test sets: session checks just before
// exp leave them, the first check at exp ends them. So does a withdrawn
// signing key. Public ones go on.
func TestSessionEndsAtExpiryAndKeyWithdrawal(t *testing.T) {
	clock := newTestClock(time.Now())
	h := newHarness(t, Config{AuthCheck: 50 * time.Millisecond, Now: clock.Now}, nil)
	h.open(7, topics.WholeBlock)
	c := h.dial(nil)
	exp := clock.Now().Add(time.Hour).Truncate(time.Second) // a token's exp is in whole seconds
	c.login(h.token(1, exp))
	c.subscribe(map[string]string{"channel": "accountOrderUpdate", "marketType": "wholeBlock"},
		map[string]string{"channel": "recentTrade", "marketType": "wholeBlock"})
	c.expect("subscribe", 0)
	c.expect("subscribe", 0)
	h.apply(topics.TypeOrderAccepted, orderEvent(1, 100, wb7, false, "2.5", "1", "0", topics.OrderStatusOnBook))
	if got := c.upTo(); len(got) != 1 || got[0].E != ChannelOrders {
		t.Fatalf("before expiry: %v", got)
	}

	clock.set(exp.Add(-time.Millisecond))
	h.waitSessionChecks(2)
	h.apply(topics.TypeOrderAccepted, orderEvent(1, 101, wb7, false, "2.6", "1", "0", topics.OrderStatusOnBook))
	if got := c.upTo(); len(got) != 1 || got[0].E != ChannelOrders {
		t.Fatalf("after session checks a millisecond before expiry: %v", got)
	}

	clock.set(exp)
	m := c.expect("error", httpx.CodeAuth)
	if !strings.Contains(m.Msg, "expired at "+exp.UTC().Format(time.RFC3339)) || !strings.Contains(m.Msg, ChannelOrders) {
		t.Fatalf("at exp %s: %s", exp, m.raw)
	}
	h.apply(topics.TypeOrderAccepted, orderEvent(1, 102, wb7, false, "2.7", "1", "0", topics.OrderStatusOnBook))
	h.apply(topics.TypeTradeExecuted, topics.Fill{TradeID: 1, InstrumentID: wb7, Slot: 7, Price: "2.5", Quantity: "1"})
	if got := c.upTo(); len(got) != 1 || got[0].E != ChannelTrade {
		t.Fatalf("after expiry: %v", got)
	}
	c.subscribe(map[string]string{"channel": "accountOrderUpdate"})
	c.expect("error", httpx.CodeAuth)

	// A fresh login; then the key that signed it is withdrawn.
	c.login(h.token(1, clock.Now().Add(time.Hour)))
	c.subscribe(map[string]string{"channel": "accountOrderUpdate"})
	c.expect("subscribe", 0)
	h.keysMu.Lock()
	h.keys = nil
	h.keysMu.Unlock()
	if err := h.tokens.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	if m := c.expect("error", httpx.CodeAuth); !strings.Contains(m.Msg, "no longer valid") {
		t.Fatalf("after key withdrawal: %s", m.raw)
	}
	h.apply(topics.TypeOrderAccepted, orderEvent(1, 103, wb7, false, "2.8", "1", "0", topics.OrderStatusOnBook))
	if got := c.upTo(); len(got) != 0 {
		t.Fatalf("orders after withdrawal: %v", got)
	}
}

func TestSubscriptionAndRateLimits(t *testing.T) {
	h := newHarness(t, Config{MaxSubscriptions: 2, RequestRate: 1, RequestBurst: 3}, nil)
	c := h.dial(nil)
	c.subscribe(map[string]string{"channel": "recentTrade", "marketType": "wholeBlock"},
		map[string]string{"channel": "recentTrade", "marketType": "inclusionPreconf"},
		map[string]string{"channel": "marketUpdate", "marketType": "wholeBlock"})
	c.expect("subscribe", 0)
	c.expect("subscribe", 0)
	if m := c.expect("error", httpx.CodeTooMany); !strings.Contains(m.Msg, "at most 2 subscriptions") {
		t.Fatalf("over the subscription limit: %s", m.raw)
	}
	for range 3 {
		c.send("ping")
	}
	codes := 0
	for range 3 {
		if m := c.next(); m.Code == httpx.CodeTooMany {
			codes++
		}
	}
	if codes == 0 {
		t.Fatal("a burst over the rate was not refused")
	}
}

// A message's args are answered one by one, in order: a refused arg gets
// its error event, naming the arg, and the others are still carried out.
func TestEachArgIsAnsweredOnItsOwn(t *testing.T) {
	h := newHarness(t, Config{}, nil)
	h.open(7, topics.WholeBlock)
	c := h.dial(nil)
	c.subscribe(map[string]string{"channel": "recentTrade", "marketType": "wholeBlock"},
		map[string]string{"channel": "klines", "marketType": "wholeBlock"},
		map[string]string{"channel": "tickerUpdate", "marketType": "wholeBlock", "instrumentId": wb7})
	got := c.upTo()
	if len(got) != 4 {
		t.Fatalf("answers: %v", got)
	}
	if got[0].Event != "subscribe" || got[0].Arg == nil || got[0].Arg.Channel != ChannelTrade {
		t.Fatalf("first arg: %s", got[0].raw)
	}
	if m := got[1]; m.Event != "error" || m.Code != topics.CodeValidation || !strings.HasPrefix(m.Msg, `args[1]: channel "klines"`) ||
		m.Arg == nil || m.Arg.Channel != "klines" || !strings.Contains(m.raw, `"op":"subscribe"`) {
		t.Fatalf("second arg: %s", m.raw)
	}
	if got[2].Event != "subscribe" || got[2].Arg == nil || got[2].Arg.Channel != ChannelTicker || got[3].A != "snapshot" {
		t.Fatalf("third arg: %s then %s", got[2].raw, got[3].raw)
	}
	h.apply(topics.TypeTradeExecuted, topics.Fill{TradeID: 9, InstrumentID: wb7, Slot: 7, Price: "2.5", Quantity: "1", Side: true})
	if got := c.upTo(); len(got) == 0 || got[0].E != ChannelTrade {
		t.Fatalf("the first arg's subscription: %v", got)
	}
}

// The openOrders query without a marketType lists the caller's resting
// orders of both families together, by orderId.
func TestOpenOrdersOfBothFamiliesByOrderID(t *testing.T) {
	h := newHarness(t, Config{}, nil)
	h.open(7, topics.WholeBlock)
	h.open(8, topics.InclusionPreconf)
	h.apply(topics.TypeOrderAccepted, orderEvent(3, 200, wb7, false, "2.5", "1", "0", topics.OrderStatusOnBook))
	h.apply(topics.TypeOrderAccepted, orderEvent(3, 100, "ETH-PC-8", true, "0.00000002", "21000", "0", topics.OrderStatusOnBook))
	c := h.dial(nil)
	c.login(h.token(3, time.Now().Add(time.Hour)))
	c.send(map[string]any{"op": "query", "args": []any{map[string]string{"queryType": "openOrders"}}})
	got := decodeP[[]markets.Order](t, c.next())
	if len(got) != 2 || got[0].OrderID != 100 || got[1].OrderID != 200 {
		t.Fatalf("openOrders: %+v", got)
	}
}

// Binary messages count against the message rate like text ones: past
// the burst they are refused with code 20, not answered one by one.
func TestBinaryMessagesCountAgainstTheRate(t *testing.T) {
	h := newHarness(t, Config{RequestRate: 0.001, RequestBurst: 1}, nil)
	c := h.dial(nil)
	for _, code := range []int{topics.CodeValidation, httpx.CodeTooMany} {
		if err := c.conn.WriteMessage(websocket.BinaryMessage, []byte("{}")); err != nil {
			t.Fatal(err)
		}
		c.expect("error", code)
	}
}
