package ingress_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"blockspace.exchange/platform/poll"
	"blockspace.exchange/platform/proctest"
	"blockspace.exchange/topics"
)

// outageLength is how long the broker stays dead: several health probes
// (every 500 ms) and outbox relay rounds, and more than the Kafka client's
// request timeouts, so that ingress meets both sides of an outage: requests
// in flight when the broker vanished, and requests after the health check
// noticed.
const outageLength = 20 * time.Second

// TestBrokerKilledWhileClientsSend runs the ingress binary while clients
// place orders, transfer between their accounts and withdraw over HTTP,
// SIGKILLs the broker under them, keeps it dead for outageLength while
// the clients go on, and starts it again on its ports and data. Every
// request is answered as docs/operations.md says: accepted (stored, and
// delivered by the outbox relay if Kafka did not take it) or 503 code 21
// with Retry-After (nothing stored); a request without an answer, or any
// other answer, fails the test. Once the outbox is empty, the orders and
// ledger-commands topics hold every acknowledged order, transfer and
// withdrawal exactly once and nothing else: no refused request was
// published. A settler then applies exactly the acknowledged transfers
// and withdrawals, and every balance is what they make it.
func TestBrokerKilledWhileClientsSend(t *testing.T) {
	// A broker of its own: it runs beside the other outage tests, after
	// those that take the shared broker in turn.
	t.Parallel()
	const perKind = 3 // clients of each kind, each its own user
	bin := proctest.Build(t, "./cmd/ingress")
	h := startBackends(t, harnessOptions{before: (*harness).openTestMarkets, ownBroker: true})
	addr := freeAddr(t)
	ingressProcess(t, h, bin, addr)
	poll.Until(t, "ingress listens", func() bool {
		conn, err := net.Dial("tcp", addr)
		if err == nil {
			conn.Close()
		}
		return err == nil
	})
	c := &mixedClients{t: t, client: &http.Client{Timeout: time.Minute}, base: "http://" + addr}
	var orderUsers, fundUsers []user
	for i := range perKind {
		u := h.newUser(fmt.Sprintf("0x%040x", 0xd000+i), "0")
		h.fund(u.preconf, "1000000")
		orderUsers = append(orderUsers, u)
		c.wg.Go(func() { c.run(kindOrder, u, i) })
	}
	for i := range 2 * perKind {
		u := h.newUser(fmt.Sprintf("0x%040x", 0xe000+i), "1000")
		fundUsers = append(fundUsers, u)
		k := kindTransfer
		if i%2 == 1 {
			k = kindWithdraw
		}
		c.wg.Go(func() { c.run(k, u, i) })
	}
	t.Cleanup(c.halt)

	c.waitAccepted(5, "before the kill")
	h.killBroker()
	c.phase.Store(int32(phaseDown))
	killed := time.Now()
	// The outage lasts outageLength, and at least until every kind of
	// request has been refused: the health check has noticed.
	for _, k := range kinds {
		poll.Until(t, k.String()+" refused while the broker is dead", func() bool { return c.count(k, phaseDown, false) > 0 })
	}
	time.Sleep(time.Until(killed.Add(outageLength)))
	stored := h.count(`SELECT count(*) FROM outbox`)
	h.startBroker()
	c.phase.Store(int32(phaseBack))
	c.waitAccepted(5, "after the broker came back")
	c.halt()
	poll.Until(t, "the outbox delivered every stored command", func() bool { return h.count(`SELECT count(*) FROM outbox`) == 0 })
	for _, k := range kinds {
		t.Logf("%s: %d accepted before the kill, %d while the broker was dead, %d after; %d refused while it was dead, %d after; median answer %s",
			k, c.count(k, phaseUp, true), c.count(k, phaseDown, true), c.count(k, phaseBack, true), c.count(k, phaseDown, false), c.count(k, phaseBack, false), c.median(k))
	}
	t.Logf("%d outbox rows waited for the broker when it came back", stored)

	c.checkOrders(h)
	transfers, withdrawals := c.checkLedger(h)
	settle(t, h, int64(transfers+withdrawals))
	c.checkBalances(h, orderUsers, fundUsers)
}

// kind is what a client sends.
type kind int

const (
	kindOrder kind = iota
	kindTransfer
	kindWithdraw
)

var kinds = []kind{kindOrder, kindTransfer, kindWithdraw}

func (k kind) String() string { return [...]string{"orders", "transfers", "withdrawals"}[k] }

// phase is where the broker is in the test when an answer comes.
type phase int32

const (
	phaseUp phase = iota
	phaseDown
	phaseBack
)

// mixedClients send orders, transfers and withdrawals, one request at a
// time per client, until halted, and keep what each answer said. Every
// request carries something unique to tell its command on the topics: an
// order its id from the answer, a transfer or withdrawal its quantity
// (1 to 999,999 millionths, numbered across clients).
type mixedClients struct {
	t      *testing.T
	client *http.Client
	base   string
	stop   atomic.Bool
	wg     sync.WaitGroup
	phase  atomic.Int32
	seq    atomic.Int64

	mu       sync.Mutex
	outcomes map[outcomeKey]int
	waited   map[kind][]time.Duration   // how long each request waited for its answer
	orders   map[int64]bool             // acknowledged order ids
	accepted map[string]decimal.Decimal // acknowledged transfer (user/quantity) or withdrawal (withdraw-<id>) → amount
	refused  map[string]bool            // user/quantity of refused transfers and withdrawals
	sums     map[int64]decimal.Decimal  // per user: acknowledged transfers, or withdrawals with their fee
}

type outcomeKey struct {
	kind     kind
	phase    phase
	accepted bool
}

const withdrawFee = "0.0001"

func (c *mixedClients) run(k kind, u user, i int) {
	for !c.stop.Load() {
		var ok bool
		switch k {
		case kindOrder:
			ok = c.order(u, i)
		case kindTransfer:
			ok = c.transfer(u)
		default:
			ok = c.withdraw(u)
		}
		if !ok {
			return
		}
	}
}

// send posts body and returns the answer; a request without an answer
// fails the test (the process stays up, so it must answer each one). A
// 503 must carry code 21 and Retry-After, and its client then waits the
// seconds it says.
func (c *mixedClients) send(k kind, path string, u user, contentType, body string) (int, map[string]any, bool) {
	req, err := http.NewRequest("POST", c.base+path, bytes.NewReader([]byte(body)))
	if err != nil {
		c.t.Error(err)
		return 0, nil, false
	}
	req.Header.Set("Authorization", "Bearer "+u.token)
	req.Header.Set("Content-Type", contentType)
	start := time.Now()
	resp, err := c.client.Do(req)
	c.took(k, time.Since(start))
	if err != nil {
		c.t.Errorf("%s: no answer: %v", k, err)
		return 0, nil, false
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Errorf("%s: read answer: %v", k, err)
		return 0, nil, false
	}
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	if resp.StatusCode == http.StatusServiceUnavailable {
		after, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		if code, _ := out["code"].(float64); code != 21 || err != nil || after < 1 {
			c.t.Errorf("%s: 503 with code %v and Retry-After %q: %s", k, out["code"], resp.Header.Get("Retry-After"), raw)
			return 0, nil, false
		}
		c.record(k, false)
		time.Sleep(time.Duration(after) * time.Second)
		return resp.StatusCode, out, true
	}
	if resp.StatusCode != http.StatusOK || out["success"] != true {
		c.t.Errorf("%s: answer %d %s", k, resp.StatusCode, raw)
		return 0, nil, false
	}
	return resp.StatusCode, out, true
}

// took adds the time one request of k waited for its answer.
func (c *mixedClients) took(k kind, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.waited == nil {
		c.waited = map[kind][]time.Duration{}
	}
	c.waited[k] = append(c.waited[k], d)
}

// median returns the median time requests of k waited for an answer.
func (c *mixedClients) median(k kind) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	ds := slices.Clone(c.waited[k])
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

func (c *mixedClients) record(k kind, accepted bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.outcomes == nil {
		c.outcomes = map[outcomeKey]int{}
	}
	c.outcomes[outcomeKey{k, phase(c.phase.Load()), accepted}]++
}

// count returns how many requests of k were accepted (or refused) with
// answers that came in phase ph.
func (c *mixedClients) count(k kind, ph phase, accepted bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.outcomes[outcomeKey{k, ph, accepted}]
}

// order places one buy of a whole block.
func (c *mixedClients) order(u user, i int) bool {
	status, out, ok := c.send(kindOrder, "/api/v1/wholeblock/order", u, "application/json",
		order(u.preconf, wbOpen, true, 2, "1", fmt.Sprintf("0.%04d", 1+i), ""))
	if !ok || status != http.StatusOK {
		return ok
	}
	data, _ := out["data"].(map[string]any)
	placed, _ := data["orders"].([]any)
	if len(placed) != 1 {
		c.t.Errorf("place answered %v", out)
		return false
	}
	o, _ := placed[0].(map[string]any)
	id, _ := o["orderId"].(float64)
	if errorCode(o) != 0 || id == 0 {
		c.t.Errorf("order refused: %v", o)
		return false
	}
	c.mu.Lock()
	if c.orders == nil {
		c.orders = map[int64]bool{}
	}
	if c.orders[int64(id)] {
		c.t.Errorf("order id %d acknowledged twice", int64(id))
	}
	c.orders[int64(id)] = true
	c.mu.Unlock()
	c.record(kindOrder, true)
	return true
}

// nextQuantity is a quantity no other transfer or withdrawal of the test
// uses.
func (c *mixedClients) nextQuantity() decimal.Decimal {
	return decimal.New(c.seq.Add(1), -6)
}

// transfer moves a unique quantity from the user's current account to
// its preconf account.
func (c *mixedClients) transfer(u user) bool {
	q := c.nextQuantity()
	form := url.Values{"fromAccountId": {fmt.Sprint(u.current)}, "toAccountId": {fmt.Sprint(u.preconf)}, "tokenId": {"1"}, "quantity": {q.String()}}
	status, _, ok := c.send(kindTransfer, "/api/v1/user/account/transfer/token", u, "application/x-www-form-urlencoded", form.Encode())
	if ok {
		c.keep(kindTransfer, u, status == http.StatusOK, transferKey(u.id, q), q, q)
	}
	return ok
}

// withdraw asks for a unique quantity from the user's current account.
func (c *mixedClients) withdraw(u user) bool {
	q := c.nextQuantity()
	status, out, ok := c.send(kindWithdraw, "/api/v1/user/funding/withdraw", u, "application/json",
		fmt.Sprintf(`[{"accountId": %d, "chainId": 1337, "tokenId": 1, "quantity": %q}]`, u.current, q))
	if !ok {
		return false
	}
	if status != http.StatusOK {
		c.keep(kindWithdraw, u, false, transferKey(u.id, q), q, q)
		return true
	}
	data, _ := out["data"].(map[string]any)
	ids, _ := data["submittedRequestIds"].([]any)
	if len(ids) != 1 {
		c.t.Errorf("withdraw answered %v", out)
		return false
	}
	id, _ := ids[0].(float64)
	c.keep(kindWithdraw, u, true, fmt.Sprintf("withdraw-%d", int64(id)), q, q.Add(decimal.RequireFromString(withdrawFee)))
	return true
}

func transferKey(user int64, q decimal.Decimal) string { return fmt.Sprintf("%d/%s", user, q) }

// keep notes the outcome of a transfer or withdrawal: under key with its
// quantity q when accepted, adding debit to the user's sum; its user and
// quantity when refused.
func (c *mixedClients) keep(k kind, u user, accepted bool, key string, q, debit decimal.Decimal) {
	c.mu.Lock()
	if c.accepted == nil {
		c.accepted, c.refused, c.sums = map[string]decimal.Decimal{}, map[string]bool{}, map[int64]decimal.Decimal{}
	}
	if accepted {
		c.accepted[key] = q
		c.sums[u.id] = c.sums[u.id].Add(debit)
	} else {
		c.refused[transferKey(u.id, q)] = true
	}
	c.mu.Unlock()
	if accepted {
		c.record(k, true)
	}
}

// waitAccepted waits until requests of every kind have been accepted n
// times in the current phase.
func (c *mixedClients) waitAccepted(n int, when string) {
	c.t.Helper()
	ph := phase(c.phase.Load())
	for _, k := range kinds {
		poll.Until(c.t, fmt.Sprintf("%d %s accepted %s", n, k, when), func() bool { return c.count(k, ph, true) >= n })
	}
}

// halt stops the clients once their requests are answered.
func (c *mixedClients) halt() {
	c.stop.Store(true)
	c.wg.Wait()
}

// checkOrders checks that the orders topic holds exactly one order.place
// of each acknowledged order and no other, and that stored orders are the
// acknowledged ones with their reservations locked.
func (c *mixedClients) checkOrders(h *harness) {
	t := c.t
	t.Helper()
	published, stored := publishedPlaces(t, h), storedOrders(t, h)
	for id := range c.orders {
		if _, ok := stored[id]; !ok {
			t.Errorf("order %d was acknowledged but is not stored", id)
		}
	}
	for id := range stored {
		if !c.orders[id] {
			t.Errorf("order %d is stored but was never acknowledged", id)
		}
	}
	checkStoredArePublished(t, stored, published)
	for cmdID, p := range published {
		if p.copies != 1 {
			t.Errorf("%s is on the orders topic %d times", cmdID, p.copies)
		}
	}
}

// checkLedger checks that ledger-commands holds exactly one command of
// each acknowledged transfer and withdrawal and no other: none of a
// refused request. It returns how many there are of each.
func (c *mixedClients) checkLedger(h *harness) (transfers, withdrawals int) {
	t := c.t
	t.Helper()
	seen := map[string]int{}
	for _, e := range h.commands() {
		var key string
		var q string
		switch e.Type {
		case topics.TypeLedgerTransfer:
			var tr topics.LedgerTransfer
			if err := topics.DecodeFunding(e, e.Type, &tr); err != nil {
				t.Fatal(err)
			}
			key, q = transferKey(tr.UserID, decimal.RequireFromString(tr.Quantity)), tr.Quantity
			if c.refused[key] {
				t.Errorf("transfer %s of user %d was refused but published as %s", tr.Quantity, tr.UserID, e.ID)
			}
		case topics.TypeLedgerWithdraw:
			var w topics.LedgerWithdraw
			if err := topics.DecodeFunding(e, e.Type, &w); err != nil {
				t.Fatal(err)
			}
			key, q = e.ID, w.Quantity
			if c.refused[transferKey(w.UserID, decimal.RequireFromString(w.Quantity))] {
				t.Errorf("withdrawal %s of user %d was refused but published as %s", w.Quantity, w.UserID, e.ID)
			}
		default:
			t.Errorf("unexpected ledger command %s %s", e.Type, e.ID)
			continue
		}
		if want, ok := c.accepted[key]; !ok || !want.Equal(decimal.RequireFromString(q)) {
			t.Errorf("%s %s (quantity %s) was published but never acknowledged", e.Type, e.ID, q)
		}
		if seen[key]++; seen[key] > 1 {
			t.Errorf("%s %s is on ledger-commands %d times", e.Type, e.ID, seen[key])
			continue
		}
		if e.Type == topics.TypeLedgerTransfer {
			transfers++
		} else {
			withdrawals++
		}
	}
	for key := range c.accepted {
		if seen[key] == 0 {
			t.Errorf("%s was acknowledged but never published", key)
		}
	}
	return transfers, withdrawals
}

// checkBalances checks, after the settler applied the ledger commands,
// that each funding user's current account is down by exactly its
// acknowledged transfers (or withdrawals and their fees) with nothing left
// locked, that a transferring user's preconf account got them, and that
// each ordering user locks what its stored orders reserve.
func (c *mixedClients) checkBalances(h *harness, orderUsers, fundUsers []user) {
	t := c.t
	t.Helper()
	checkLockedFunds(t, h, orderUsers, storedOrders(t, h))
	for i, u := range fundUsers {
		var cur, curLocked, pre decimal.Decimal
		if err := h.pool.QueryRow(t.Context(), `
			SELECT c.quantity, c.locked, p.quantity FROM account_balances c, account_balances p
			WHERE c.account_id = $1 AND p.account_id = $2 AND c.token_id = 1 AND p.token_id = 1`, u.current, u.preconf).
			Scan(&cur, &curLocked, &pre); err != nil {
			t.Fatal(err)
		}
		sum := c.sums[u.id]
		wantPre := sum
		if i%2 == 1 { // withdrawing
			wantPre = decimal.Zero
		}
		if !cur.Equal(decimal.NewFromInt(1000).Sub(sum)) || !curLocked.IsZero() || !pre.Equal(wantPre) {
			t.Errorf("user %d: current %s (locked %s), preconf %s; acknowledged %s", u.id, cur, curLocked, pre, sum)
		}
	}
}
