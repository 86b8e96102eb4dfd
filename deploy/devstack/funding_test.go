package devstack

import (
	"encoding/json"
	"fmt"
	"math/big"
	"net/url"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/ethclient"

	"blockspace.exchange/deploy/devchain"
	"blockspace.exchange/platform/poll"
	"blockspace.exchange/settler"
)

// TestFundingEndToEnd: a deposit on the dev chain (sent over its JSON-RPC)
// is credited, moved to the trading account and back, withdrawn, paid on
// chain and confirmed; balances, account transactions and the audit agree.
func TestFundingEndToEnd(t *testing.T) {
	t.Parallel()
	s := startStack(t, worldTempDir(t))
	c := client{t: t, base: s.Addresses().REST}
	_, rpcURL := s.Chain()
	if rpcURL == "" {
		t.Fatal("the dev chain serves no JSON-RPC")
	}
	r := call(t, "GET", c.base+"/api/v1/p/funding/contractAddress")
	if !strings.Contains(strings.ToLower(string(r.body.Data)), strings.ToLower(devchain.CollateralAddress().Hex())) {
		t.Fatalf("contract address: %s", r.body.Data)
	}
	w := newWallet(t)
	sess, _ := w.login(t, c)
	tok := bearer(sess.AccessToken.Token)

	eth, err := ethclient.Dial(rpcURL)
	if err != nil {
		t.Fatal(err)
	}
	defer eth.Close()
	s.deposit(t, 1, w.addr, "1.5")

	type balance struct {
		AccountID int64 `json:"accountId"`
		Type      int   `json:"type"`
		Tokens    []struct {
			Quantity string `json:"quantity"`
		} `json:"tokens"`
	}
	accounts := func() (cur, pre balance) {
		a := c.do("GET", "/api/v1/user/accounts", nil, tok)
		var d struct{ Accounts []balance }
		_ = json.Unmarshal(a.body.Data, &d)
		for _, acc := range d.Accounts {
			if acc.Type == 1 {
				cur = acc
			} else {
				pre = acc
			}
		}
		return cur, pre
	}
	qty := func(b balance) string {
		if len(b.Tokens) == 0 {
			return "0"
		}
		return b.Tokens[0].Quantity
	}
	poll.Until(t, "deposit credited", func() bool { cur, _ := accounts(); return qty(cur) == "1.5" })
	cur, pre := accounts()

	transfer := func(from, to int64, q string) {
		a := c.do("POST", "/api/v1/user/account/transfer/token", url.Values{"fromAccountId": {fmt.Sprint(from)}, "toAccountId": {fmt.Sprint(to)},
			"tokenId": {"1"}, "quantity": {q}}, tok)
		if a.status != 200 || !a.body.Success {
			t.Fatalf("transfer: %d %s", a.status, a.raw)
		}
	}
	transfer(cur.AccountID, pre.AccountID, "0.5")
	poll.Until(t, "transfer out", func() bool { _, p := accounts(); return qty(p) == "0.5" })
	transfer(pre.AccountID, cur.AccountID, "0.2")
	poll.Until(t, "transfer back", func() bool { c, p := accounts(); return qty(p) == "0.3" && qty(c) == "1.2" })

	before, _ := eth.BalanceAt(t.Context(), common.HexToAddress(w.addr), nil)
	code, out := postJSON(t, c.base+"/api/v1/user/funding/withdraw",
		[]map[string]any{{"accountId": cur.AccountID, "chainId": 1337, "tokenId": 1, "quantity": "1"}}, tok)
	ids, _ := out["data"].(map[string]any)["submittedRequestIds"].([]any)
	if code != 200 || len(ids) != 1 {
		t.Fatalf("withdraw: %d %v", code, out)
	}
	id := fmt.Sprint(ids[0])
	var status struct {
		Requests []struct {
			Status int     `json:"status"`
			TxHash *string `json:"txHash"`
		}
		DailyWithdrawLimits []struct {
			Remaining string `json:"remainingWithdrawLimit"`
		}
	}
	poll.Until(t, "withdrawal confirmed", func() bool {
		a := c.do("GET", "/api/v1/user/funding/withdraw/status?requestIds="+id, nil, tok)
		_ = json.Unmarshal(a.body.Data, &status)
		return len(status.Requests) == 1 && status.Requests[0].Status == 10
	})
	if status.Requests[0].TxHash == nil || status.DailyWithdrawLimits[0].Remaining != "999" {
		t.Fatalf("confirmed request: %+v", status)
	}
	after, _ := eth.BalanceAt(t.Context(), common.HexToAddress(w.addr), nil)
	if paid := new(big.Int).Sub(after, before); paid.String() != "1000000000000000000" {
		t.Fatalf("wallet received %s wei", paid)
	}
	cur, _ = accounts()
	if qty(cur) != "0.1999" { // 1.5 - 0.5 + 0.2 - 1 - 0.0001
		t.Fatalf("current account holds %s", qty(cur))
	}
	a := c.do("GET", "/api/v1/user/account/txs?type=8,7,6,9,14", nil, tok)
	var txs struct {
		Txs []struct {
			Type int `json:"type"`
		}
	}
	_ = json.Unmarshal(a.body.Data, &txs)
	var types []int
	for _, x := range txs.Txs {
		types = append(types, x.Type)
	}
	if fmt.Sprint(types) != "[14 9 6 7 6 7 8]" {
		t.Fatalf("account transactions, newest first: %v", types)
	}
	a = c.do("GET", "/api/v1/user/funding/deposits", nil, tok)
	if !strings.Contains(string(a.raw), `"q":1500000000000000000`) {
		t.Fatalf("deposits: %s", a.raw)
	}
	v, err := settler.Audit(t.Context(), s.pool, 10)
	if err != nil || len(v) > 0 {
		t.Fatalf("audit: %v %v", v, err)
	}
}
