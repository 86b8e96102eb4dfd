package live

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"blockspace.exchange/query-api/internal/tradingreads"
	"blockspace.exchange/topics"
)

// Operations of a client message.
const (
	OpSubscribe   = "subscribe"
	OpUnsubscribe = "unsubscribe"
	OpQuery       = "query"
	OpLogin       = "login"
)

// Public channels.
const (
	ChannelMarket = "marketUpdate"
	ChannelBook   = "orderBookUpdate"
	ChannelTrade  = "recentTrade"
	ChannelTicker = "tickerUpdate"
	// ChannelCandles takes an interval and reads its candles from
	// Postgres (candles.go).
	ChannelCandles = "candles"
)

// Private channels, open after login.
const (
	ChannelOrders       = "accountOrderUpdate"
	ChannelBalances     = "accountBalanceUpdate"
	ChannelTransactions = "accountTransactionUpdate"
	ChannelPositions    = "positionUpdate"
)

// Query types.
const (
	QueryMarkets      = "markets"
	QueryBook         = "orderBook"
	QueryCurrentSlot  = "currentSlot"
	QueryRecentTrades = "recentTrades"
	QueryOpenOrders   = "openOrders"
	QueryPositions    = "positions"
)

// Market types of the protocol, one per market family (docs/websocket.md
// "Messages").
const (
	MarketWholeBlock       = "wholeBlock"
	MarketInclusionPreconf = "inclusionPreconf"
)

// CodeOK acknowledges a message (docs/codes.md "WebSocket codes"). The
// error codes are the REST interface's: httpx.CodeAuth, httpx.CodeTooMany,
// httpx.CodeUnavailable, httpx.CodeUnexpected, topics.CodeValidation and
// topics.CodeMarketNotOpen (no visible market with that instrumentId).
const CodeOK = 0

const (
	maxArgs          = 20
	maxRecentTrades  = 100
	defRecentTrades  = 20
	maxInstrumentLen = 32
)

// channelKind says what a channel needs.
type channelKind struct {
	private   bool
	needsType bool // marketType is required
	noMarket  bool // marketType and instrumentId do not apply
	hasReplay bool // subscribe sends the current state first
	interval  bool // interval is required and instrumentId refused
}

var channels = map[string]channelKind{
	ChannelMarket: {needsType: true}, ChannelBook: {needsType: true, hasReplay: true},
	ChannelTrade: {needsType: true}, ChannelTicker: {needsType: true, hasReplay: true},
	ChannelCandles: {needsType: true, hasReplay: true, interval: true},
	ChannelOrders:  {private: true}, ChannelPositions: {private: true},
	ChannelBalances: {private: true, noMarket: true}, ChannelTransactions: {private: true, noMarket: true},
}

var queries = map[string]channelKind{
	QueryMarkets: {needsType: true}, QueryBook: {}, QueryCurrentSlot: {noMarket: true},
	QueryRecentTrades: {}, QueryOpenOrders: {private: true}, QueryPositions: {private: true},
}

// Request is one decoded client message. Each arg is answered on its
// own: Refused[i] is why Args[i] is refused, nil when it fits the op.
type Request struct {
	Op      string
	Args    []Arg
	Refused []*protoError
}

// Arg is one element of a message's args. Family is the decoded
// marketType ("" when absent).
type Arg struct {
	Channel      string        `json:"channel,omitempty"`
	MarketType   string        `json:"marketType,omitempty"`
	InstrumentID string        `json:"instrumentId,omitempty"`
	QueryType    string        `json:"queryType,omitempty"`
	Limit        int           `json:"limit,omitempty"`
	Interval     string        `json:"interval,omitempty"`
	AccessToken  string        `json:"-"`
	Family       topics.Family `json:"-"`
}

// protoError is a refusal with a code, answered as an error event.
type protoError struct {
	code int
	msg  string
	op   string
	arg  *Arg
}

func (e *protoError) Error() string { return e.msg }

func invalid(format string, a ...any) *protoError {
	return &protoError{code: topics.CodeValidation, msg: fmt.Sprintf(format, a...)}
}

// wireRequest is the JSON shape of a client message. Unknown fields are
// ignored, as in every reader of the exchange.
type wireRequest struct {
	Op   *string           `json:"op"`
	Args []json.RawMessage `json:"args"`
}

type wireArg struct {
	Channel      *string `json:"channel"`
	MarketType   *string `json:"marketType"`
	InstrumentID *string `json:"instrumentId"`
	QueryType    *string `json:"queryType"`
	Limit        *int    `json:"limit"`
	Interval     *string `json:"interval"`
	AccessToken  *string `json:"accessToken"`
}

// DecodeRequest reads and checks one client message: a JSON object
// {"op": ..., "args": [...]} whose args fit the op. The error names the
// field and the rule that failed.
func DecodeRequest(msg []byte) (Request, error) {
	var w wireRequest
	dec := json.NewDecoder(bytes.NewReader(msg))
	dec.UseNumber()
	if err := dec.Decode(&w); err != nil {
		return Request{}, invalid("message is not a JSON object {\"op\": ..., \"args\": [...]}: %s", short(err.Error()))
	}
	if dec.More() {
		return Request{}, invalid("message has data after its JSON object")
	}
	if w.Op == nil {
		return Request{}, invalid("op is required: subscribe, unsubscribe, query or login")
	}
	op := *w.Op
	switch op {
	case OpSubscribe, OpUnsubscribe, OpQuery, OpLogin:
	default:
		return Request{}, invalid("op %q is not subscribe, unsubscribe, query or login", short(op))
	}
	if len(w.Args) == 0 {
		return Request{}, &protoError{code: topics.CodeValidation, op: op, msg: "args must be a non-empty array"}
	}
	if len(w.Args) > maxArgs {
		return Request{}, &protoError{code: topics.CodeValidation, op: op, msg: fmt.Sprintf("args has %d elements; at most %d", len(w.Args), maxArgs)}
	}
	if op == OpLogin && len(w.Args) != 1 {
		return Request{}, &protoError{code: topics.CodeValidation, op: op, msg: "login takes exactly one arg {\"accessToken\": ...}"}
	}
	req := Request{Op: op, Args: make([]Arg, 0, len(w.Args)), Refused: make([]*protoError, 0, len(w.Args))}
	for i, raw := range w.Args {
		a, err := decodeArg(op, raw)
		if err != nil {
			err.op, err.arg = op, a.echo()
			err.msg = fmt.Sprintf("args[%d]: %s", i, err.msg)
		}
		req.Args = append(req.Args, a)
		req.Refused = append(req.Refused, err)
	}
	return req, nil
}

func decodeArg(op string, raw json.RawMessage) (Arg, *protoError) {
	var w wireArg
	if err := json.Unmarshal(raw, &w); err != nil {
		return Arg{}, invalid("not an object of string fields: %s", short(err.Error()))
	}
	if op == OpLogin {
		if w.AccessToken == nil || *w.AccessToken == "" {
			return Arg{}, invalid("accessToken is required")
		}
		return Arg{AccessToken: *w.AccessToken}, nil
	}
	a := Arg{Channel: deref(w.Channel), MarketType: deref(w.MarketType), InstrumentID: deref(w.InstrumentID),
		QueryType: deref(w.QueryType), Interval: deref(w.Interval)}
	kind, err := a.kind(op)
	if err != nil {
		return a, err
	}
	if err := a.market(kind); err != nil {
		return a, err
	}
	if err := a.interval(kind); err != nil {
		return a, err
	}
	if w.Limit != nil {
		if op != OpQuery || a.QueryType != QueryRecentTrades || *w.Limit < 1 || *w.Limit > maxRecentTrades {
			return a, invalid("limit %d is allowed only on queryType recentTrades, from 1 to %d", *w.Limit, maxRecentTrades)
		}
		a.Limit = *w.Limit
	}
	return a, nil
}

// kind checks the channel (subscribe, unsubscribe) or queryType (query).
func (a *Arg) kind(op string) (channelKind, *protoError) {
	if op == OpQuery {
		if a.Channel != "" {
			return channelKind{}, invalid("a query names queryType, not channel")
		}
		k, ok := queries[a.QueryType]
		if !ok {
			return k, invalid("queryType %q is not one of markets, orderBook, currentSlot, recentTrades, openOrders, positions", short(a.QueryType))
		}
		if (a.QueryType == QueryBook || a.QueryType == QueryRecentTrades) && a.InstrumentID == "" {
			return k, invalid("queryType %s needs instrumentId", a.QueryType)
		}
		if a.QueryType == QueryMarkets && a.InstrumentID != "" {
			return k, invalid("queryType markets lists every market of a marketType and takes no instrumentId")
		}
		return k, nil
	}
	if a.QueryType != "" {
		return channelKind{}, invalid("%s names channel, not queryType", op)
	}
	k, ok := channels[a.Channel]
	if !ok {
		return k, invalid("channel %q is not one of %s", short(a.Channel), strings.Join(channelNames(), ", "))
	}
	return k, nil
}

// market checks marketType and instrumentId against each other and what
// the channel or query takes, and sets Family.
func (a *Arg) market(k channelKind) *protoError {
	if k.noMarket {
		if a.MarketType != "" || a.InstrumentID != "" {
			return invalid("%s takes no marketType or instrumentId", a.name())
		}
		return nil
	}
	switch a.MarketType {
	case MarketWholeBlock:
		a.Family = topics.WholeBlock
	case MarketInclusionPreconf:
		a.Family = topics.InclusionPreconf
	case "":
		if k.needsType {
			return invalid("%s needs marketType wholeBlock or inclusionPreconf", a.name())
		}
	default:
		return invalid("marketType %q is not wholeBlock or inclusionPreconf", short(a.MarketType))
	}
	if a.InstrumentID == "" {
		return nil
	}
	f, _, err := topics.ParseInstrumentID(a.InstrumentID)
	if err != nil || len(a.InstrumentID) > maxInstrumentLen {
		return invalid("instrumentId %q is not ETH-WB-<slot> or ETH-PC-<slot>", short(a.InstrumentID))
	}
	if a.Family != "" && f != a.Family {
		return invalid("instrumentId %s is not a %s market", a.InstrumentID, a.MarketType)
	}
	a.Family = f
	if a.MarketType == "" {
		a.MarketType = marketType(f)
	}
	return nil
}

// interval checks the interval of a channel that takes one, and that no
// other names one.
func (a *Arg) interval(k channelKind) *protoError {
	if !k.interval {
		if a.Interval != "" {
			return invalid("interval is allowed only on channel %s", ChannelCandles)
		}
		return nil
	}
	if a.InstrumentID != "" {
		return invalid("%s covers every market of a marketType and takes no instrumentId", a.name())
	}
	if !slices.Contains(tradingreads.IntervalNames, a.Interval) {
		return invalid("%s needs interval %s, got %q", a.name(), strings.Join(tradingreads.IntervalNames, ", "), short(a.Interval))
	}
	return nil
}

// echo is a refused arg as its error event names it: what was read of
// it, bounded, or nil when nothing was.
func (a Arg) echo() *Arg {
	if a == (Arg{}) {
		return nil
	}
	return &Arg{Channel: short(a.Channel), MarketType: short(a.MarketType), InstrumentID: short(a.InstrumentID),
		QueryType: short(a.QueryType), Limit: a.Limit, Interval: short(a.Interval)}
}

func (a *Arg) name() string {
	if a.QueryType != "" {
		return "queryType " + a.QueryType
	}
	return "channel " + a.Channel
}

func marketType(f topics.Family) string {
	if f == topics.WholeBlock {
		return MarketWholeBlock
	}
	return MarketInclusionPreconf
}

func channelNames() []string {
	return []string{ChannelMarket, ChannelBook, ChannelTrade, ChannelTicker, ChannelCandles,
		ChannelOrders, ChannelBalances, ChannelTransactions, ChannelPositions}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// short keeps echoed client text readable and bounded.
func short(s string) string {
	const max = 64
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
