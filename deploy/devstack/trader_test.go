package devstack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi/bind"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/shopspring/decimal"

	"blockspace.exchange/deploy/devchain"
	"blockspace.exchange/platform/chain/collateral"
	"blockspace.exchange/platform/poll"
	"blockspace.exchange/platform/users"
	"blockspace.exchange/topics"
)

// trader is a wallet logged in to the stack, with its current (type 1)
// and preconf trading (type 2) accounts. Everything it does goes through
// the REST base.
type trader struct {
	t                *testing.T
	c                client
	addr             string
	user             int64
	current, preconf int64
	auth             map[string]string
}

func logIn(t *testing.T, c client, w wallet) *trader {
	t.Helper()
	sess, _ := w.login(t, c)
	return sessionTrader(t, c, w, sess)
}

// sessionTrader is the trader of a session w started.
func sessionTrader(t *testing.T, c client, w wallet, sess session) *trader {
	t.Helper()
	tr := &trader{t: t, c: c, addr: w.addr, user: sess.User.UserID, auth: bearer(sess.AccessToken.Token)}
	for _, a := range sess.User.Accounts {
		switch a.Type {
		case 1:
			tr.current = a.AccountID
		case 2:
			tr.preconf = a.AccountID
		}
	}
	if tr.current == 0 || tr.preconf == 0 {
		t.Fatalf("user %d lacks an account: %+v", tr.user, sess.User.Accounts)
	}
	return tr
}

// send sends a JSON body (none when body is nil) with the trader's token.
func (tr *trader) send(method, path string, body any) answer {
	tr.t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			tr.t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, tr.c.base+path, r)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range tr.auth {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tr.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	a := answer{reply: reply{status: resp.StatusCode, header: resp.Header}}
	a.raw, _ = io.ReadAll(resp.Body)
	_ = json.Unmarshal(a.raw, &a.body)
	return a
}

// call sends the request and decodes data into v (if not nil); anything
// but 200 with success:true fails the test.
func (tr *trader) call(method, path string, body, v any) {
	tr.t.Helper()
	a := tr.send(method, path, body)
	if a.status != 200 || !a.body.Success {
		tr.t.Fatalf("%s %s: %d %s", method, path, a.status, a.raw)
	}
	if v != nil {
		if err := json.Unmarshal(a.body.Data, v); err != nil {
			tr.t.Fatalf("%s %s: %v: %s", method, path, err, a.raw)
		}
	}
}

// balance is the trader's ETH balance of one of its accounts, read
// through /api/v1/user/accounts.
func (tr *trader) balance(account int64) users.TokenBalance {
	tr.t.Helper()
	var d struct{ Accounts []users.Account }
	tr.call("GET", "/api/v1/user/accounts", nil, &d)
	for _, a := range d.Accounts {
		if a.AccountID != account {
			continue
		}
		for _, tok := range a.Tokens {
			if tok.TokenID == 1 {
				return tok
			}
		}
		return users.TokenBalance{}
	}
	tr.t.Fatalf("account %d is not among the accounts of user %d", account, tr.user)
	return users.TokenBalance{}
}

// waitBalance waits until the account holds quantity with locked of it
// locked.
func (tr *trader) waitBalance(what string, account int64, quantity, locked string) {
	tr.t.Helper()
	q, l := decimal.RequireFromString(quantity), decimal.RequireFromString(locked)
	var last users.TokenBalance
	poll.Before(tr.t, what, time.Now().Add(poll.Timeout), func() bool {
		last = tr.balance(account)
		return last.Quantity.Equal(q) && last.LockedQuantity.Equal(l) && last.AvailableQuantity.Equal(q.Sub(l))
	}, func() string {
		return fmt.Sprintf("account %d holds %s, locked %s", account, last.Quantity, last.LockedQuantity)
	})
}

// transfer moves quantity ETH between two of the trader's accounts and
// waits until the settler applied it.
func (tr *trader) transfer(from, to int64, quantity string) {
	tr.t.Helper()
	before := [2]decimal.Decimal{tr.balance(from).Quantity, tr.balance(to).Quantity}
	q := decimal.RequireFromString(quantity)
	a := tr.c.do("POST", "/api/v1/user/account/transfer/token", url.Values{"fromAccountId": {fmt.Sprint(from)},
		"toAccountId": {fmt.Sprint(to)}, "tokenId": {"1"}, "quantity": {quantity}}, tr.auth)
	if a.status != 200 || !a.body.Success {
		tr.t.Fatalf("transfer: %d %s", a.status, a.raw)
	}
	poll.Until(tr.t, "the transfer applied", func() bool {
		return tr.balance(from).Quantity.Equal(before[0].Sub(q)) && tr.balance(to).Quantity.Equal(before[1].Add(q))
	})
}

// ownOrder is an order as /api/v1/user/{family}/orders shows it.
type ownOrder struct {
	OrderID           int64               `json:"orderId"`
	InstrumentID      string              `json:"instrumentId"`
	Side              bool                `json:"side"`
	Quantity          decimal.Decimal     `json:"quantity"`
	Fulfilled         decimal.Decimal     `json:"fulfilled"`
	Price             decimal.NullDecimal `json:"price"`
	Fees              decimal.Decimal     `json:"fees"`
	Status            int                 `json:"status"`
	ErrorCode         *int                `json:"errorCode"`
	ClientOrderID     *string             `json:"clientOrderId"`
	AverageTradePrice decimal.NullDecimal `json:"averageTradePrice"`
}

// family is the family of an instrument, the segment of its paths.
func family(t *testing.T, instrument string) topics.Family {
	t.Helper()
	f, _, err := topics.ParseInstrumentID(instrument)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// place places one order and returns its id; a refusal, by ingress or
// by the matcher, fails the test.
func (tr *trader) place(o map[string]any) int64 {
	tr.t.Helper()
	got := tr.placeAnswer(o)
	if got["errorCode"] != nil || got["orderId"] == nil {
		tr.t.Fatalf("place refused: %v", got)
	}
	return int64(got["orderId"].(float64))
}

// placeAnswer places one order and returns the order of the answer. An
// instrument ingress has not read the market.open of yet answers 114;
// the order is then placed again until the market is known (a refused
// order stores nothing).
func (tr *trader) placeAnswer(o map[string]any) map[string]any {
	tr.t.Helper()
	path := "/api/v1/" + string(family(tr.t, o["instrumentId"].(string))) + "/order"
	var placed struct{ Orders []map[string]any }
	var last []byte
	poll.Before(tr.t, "order entry to accept the order", time.Now().Add(poll.Timeout), func() bool {
		a := tr.send("POST", path, o)
		last = a.raw
		placed.Orders = nil
		if a.status != 200 || json.Unmarshal(a.body.Data, &placed) != nil || len(placed.Orders) != 1 {
			tr.t.Fatalf("place: %d %s", a.status, a.raw)
		}
		return placed.Orders[0]["errorCode"] != float64(topics.CodeMarketNotOpen) || placed.Orders[0]["orderId"] != nil
	}, func() string { return string(last) })
	return placed.Orders[0]
}

// orders reads the trader's orders of a family by id.
func (tr *trader) orders(fam topics.Family) map[int64]ownOrder {
	tr.t.Helper()
	var d struct{ Orders []ownOrder }
	tr.call("GET", "/api/v1/user/"+string(fam)+"/orders?limit=100", nil, &d)
	out := make(map[int64]ownOrder, len(d.Orders))
	for _, o := range d.Orders {
		out[o.OrderID] = o
	}
	return out
}

// waitOrders waits until every named order of the family has its status.
func (tr *trader) waitOrders(what string, fam topics.Family, want map[int64]int) {
	tr.t.Helper()
	var got map[int64]ownOrder
	poll.Before(tr.t, what, time.Now().Add(poll.Timeout), func() bool {
		got = tr.orders(fam)
		for id, st := range want {
			if got[id].Status != st {
				return false
			}
		}
		return true
	}, func() string { return fmt.Sprintf("orders %+v, want statuses %v", got, want) })
}

// accountTx is an account transaction as /api/v1/user/account/txs shows it.
type accountTx struct {
	TrxID     int64           `json:"trxId"`
	AccountID int64           `json:"accountId"`
	Type      int             `json:"type"`
	Quantity  decimal.Decimal `json:"quantity"`
	Balance   decimal.Decimal `json:"balance"`
}

// txs reads the account transactions of all the trader's accounts,
// newest first.
func (tr *trader) txs() []accountTx {
	tr.t.Helper()
	var d struct{ Txs []accountTx }
	tr.call("GET", "/api/v1/user/account/txs?limit=100", nil, &d)
	return d.Txs
}

// deposit sends amount ETH to the dev chain's collateral contract for
// addr over the chain's JSON-RPC, paid by dev key payer, as
// deploy/cmd/devdeposit does; the deposit watcher credits it once it is
// deep enough.
func (s *running) deposit(t *testing.T, payer int, addr, amount string) {
	t.Helper()
	chain, rpcURL := s.Chain()
	if rpcURL == "" {
		t.Fatal("the dev chain serves no JSON-RPC")
	}
	depositFor(t, chain, rpcURL, payer, addr, amount)
}

// depositFor sends amount ETH to the collateral contract of the dev chain
// at rpcURL for addr, paid by dev key payer.
func depositFor(t *testing.T, chain *devchain.Chain, rpcURL string, payer int, addr, amount string) {
	t.Helper()
	eth, err := ethclient.Dial(rpcURL)
	if err != nil {
		t.Fatal(err)
	}
	defer eth.Close()
	contract, err := collateral.NewCollateral(devchain.CollateralAddress(), eth)
	if err != nil {
		t.Fatal(err)
	}
	auth, err := bind.NewKeyedTransactorWithChainID(chain.Key(payer), chain.ChainID())
	if err != nil {
		t.Fatal(err)
	}
	auth.Value = decimal.RequireFromString(amount).Shift(18).BigInt()
	if auth.Value.Cmp(big.NewInt(0)) <= 0 {
		t.Fatalf("deposit of %s", amount)
	}
	if _, err := contract.DepositFor(auth, common.HexToAddress(addr)); err != nil {
		t.Fatal(err)
	}
}

// fund deposits amount ETH on the dev chain for the trader and moves
// toTrading of it to its trading account: all through the ledger, as a
// user funds an account.
func (s *running) fund(tr *trader, payer int, amount, toTrading string) {
	tr.t.Helper()
	s.deposit(tr.t, payer, tr.addr, amount)
	tr.waitBalance("the deposit credited", tr.current, amount, "0")
	tr.transfer(tr.current, tr.preconf, toTrading)
}
