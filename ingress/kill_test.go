package ingress_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"blockspace.exchange/ingress/internal/orderentry"
	"blockspace.exchange/platform/auth"
	"blockspace.exchange/platform/poll"
	"blockspace.exchange/platform/proctest"
	"blockspace.exchange/topics"
)

// ingressProcess starts the ingress binary against the harness's database
// and broker, signing with the harness's key and serving order entry on
// addr. Its outbox relay republishes rows a second old, so that what a
// killed process left is delivered soon.
func ingressProcess(t *testing.T, h *harness, bin, addr string) *exec.Cmd {
	t.Helper()
	key, err := auth.EncodePrivateKey(h.key)
	if err != nil {
		t.Fatal(err)
	}
	return proctest.Start(t, bin, "DATABASE_URL="+h.pool.Config().ConnString(), "KAFKA_BROKERS="+h.brokers[0],
		"ENVIRONMENT=dev", "LOG_LEVEL=warn", "AUTH_SIGNING_KEY="+string(key), "HTTP_ADDR="+addr,
		"ADMIN_ADDR=127.0.0.1:0", "ORIGINATOR_ADDR=127.0.0.1:0", "SEARCHER_ADDR=127.0.0.1:0", "ORDERFLOW_ADDR=127.0.0.1:0",
		"OUTBOX_RELAY_AGE=1s", "OUTBOX_RELAY_EVERY=100ms")
}

// freeAddr returns a loopback address with a port nothing listens on, for
// a process that must listen on the same address again after a restart.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// orderClients place buy orders over HTTP in a loop, one client per
// account, until halted. A request without an answer (the process is
// down, or was killed while it waited) is tried again after a short
// pause and not counted as acknowledged; so is a 503 (the restarted
// process's market catalog is not ready yet).
type orderClients struct {
	t      *testing.T
	client *http.Client
	url    string
	stop   atomic.Bool
	wg     sync.WaitGroup

	unanswered atomic.Int64
	mu         sync.Mutex
	acked      []int64 // ids of the orders 200 answers named
}

func startOrderClients(t *testing.T, addr string, users []user) *orderClients {
	c := &orderClients{t: t, client: &http.Client{Timeout: time.Minute}, url: "http://" + addr + "/api/v1/wholeblock/order"}
	for i, u := range users {
		body := []byte("[" + order(u.preconf, wbOpen, true, 2, "1", fmt.Sprintf("0.%04d", 1+i), "") + "," +
			order(u.preconf, wbOpen, true, 2, "1", fmt.Sprintf("1.%04d", 1+i), "") + "]")
		c.wg.Go(func() { c.run(u.token, body) })
	}
	t.Cleanup(c.halt)
	return c
}

func (c *orderClients) run(token string, body []byte) {
	for !c.stop.Load() {
		status, placed, err := c.place(token, body)
		switch {
		case err != nil:
			c.unanswered.Add(1)
			time.Sleep(20 * time.Millisecond)
		case status == 503:
			time.Sleep(20 * time.Millisecond)
		case status != 200:
			c.t.Errorf("place answered %d", status)
			return
		}
		for _, o := range placed {
			if o.ErrorCode != 0 || o.OrderID == 0 {
				c.t.Errorf("order refused: %+v", o)
				return
			}
			c.mu.Lock()
			c.acked = append(c.acked, o.OrderID)
			c.mu.Unlock()
		}
	}
}

type placedOrder struct {
	OrderID   int64 `json:"orderId"`
	ErrorCode int   `json:"errorCode"`
}

// place sends one place request and returns the status and, for a 200,
// its orders; an error means there was no full answer.
func (c *orderClients) place(token string, body []byte) (int, []placedOrder, error) {
	req, err := http.NewRequest("POST", c.url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var answer struct {
		Data struct {
			Orders []placedOrder `json:"orders"`
		} `json:"data"`
	}
	if resp.StatusCode != 200 {
		_, err := io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil, err
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		return 0, nil, fmt.Errorf("read answer: %w", err)
	}
	return 200, answer.Data.Orders, nil
}

// halt stops the clients once their requests are answered.
func (c *orderClients) halt() {
	c.stop.Store(true)
	c.wg.Wait()
}

// ackedAbove returns how many acknowledged order ids are greater than id.
func (c *orderClients) ackedAbove(id int64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.acked {
		if v > id {
			n++
		}
	}
	return n
}

// killAfterNextCommit kills the process as soon as Postgres shows another
// batch of orders committed: with the producer's linger (2 ms) the
// batch's commands have most likely not left the process yet, the crash
// the outbox exists for. The wait polls without pause so as not to miss
// that moment; it lasts a few milliseconds while clients place orders.
func killAfterNextCommit(t *testing.T, h *harness, cmd *exec.Cmd) {
	t.Helper()
	const stored = `SELECT count(*) FROM orders`
	before := h.count(stored)
	for deadline := time.Now().Add(time.Minute); h.count(stored) == before; {
		if time.Now().After(deadline) {
			t.Fatal("no batch of orders committed within a minute")
		}
	}
	proctest.Kill(t, cmd)
}

// TestIngressProcessKilledMidStream runs the ingress binary while
// concurrent clients place buy orders over HTTP, kills it with SIGKILL
// (no drain, no outbox delete, nothing flushed) right after it committed
// a batch, starts it again on the same address, and once the outbox is
// empty checks the orders topic against Postgres: every acknowledged
// order and every stored one has its order.place, every order.place has
// its stored order, copies of a command are identical, and each account
// locks exactly what its stored orders reserve.
func TestIngressProcessKilledMidStream(t *testing.T) {
	const accounts, perProcess = 16, 200
	bin := proctest.Build(t, "./cmd/ingress")
	h := startBackends(t, harnessOptions{before: (*harness).openTestMarkets})
	users := make([]user, accounts)
	for i := range users {
		users[i] = h.newUser(fmt.Sprintf("0x%040x", 0xc000+i), "0")
		h.fund(users[i].preconf, "1000000")
	}
	addr := freeAddr(t)
	first := ingressProcess(t, h, bin, addr)
	clients := startOrderClients(t, addr, users)

	poll.Until(t, "orders acknowledged by the first process", func() bool { return clients.ackedAbove(0) >= perProcess })
	killAfterNextCommit(t, h, first)
	// Order ids come from blocks of a sequence, so every order the
	// restarted process stores has a greater id than any of the killed one.
	lastBeforeKill := int64(h.count(`SELECT coalesce(max(order_id), 0) FROM orders`))
	storedAtKill, publishedAtKill := len(storedOrders(t, h)), len(publishedPlaces(t, h))
	ingressProcess(t, h, bin, addr)
	poll.Until(t, "orders acknowledged by the restarted process", func() bool { return clients.ackedAbove(lastBeforeKill) >= perProcess })
	clients.halt()
	poll.Until(t, "the outbox delivered every stored command", func() bool { return h.count(`SELECT count(*) FROM outbox`) == 0 })

	published, stored := publishedPlaces(t, h), storedOrders(t, h)
	checkAcknowledged(t, clients.acked, lastBeforeKill, published, stored)
	checkStoredArePublished(t, stored, published)
	checkLockedFunds(t, h, users, stored)
	copies := 0
	for _, p := range published {
		copies += p.copies - 1
	}
	t.Logf("when the process was killed: %d orders stored, %d commands on the topic; %d requests unanswered in all",
		storedAtKill, publishedAtKill, clients.unanswered.Load())
	t.Logf("in the end %d orders acknowledged, %d stored, %d commands published (%d more copies)",
		len(clients.acked), len(stored), len(published), copies)
}

// publishedPlace is one order.place command on the orders topic.
type publishedPlace struct {
	cmd       topics.OrderPlace
	time      int64
	partition int32
	copies    int
}

// publishedPlaces reads the order.place commands of the orders topic by
// command id. Copies of one command (the outbox relay republishing a row
// whose first publication it could not see acknowledged) must carry the
// same id, order and partition, so that consumers drop all but one.
func publishedPlaces(t *testing.T, h *harness) map[string]*publishedPlace {
	t.Helper()
	out := make(map[string]*publishedPlace)
	for _, r := range h.commandsOf(topics.TypeOrderPlace) {
		e, cmd := decodeCommand[topics.OrderPlace](t, r)
		if want := orderentry.PlaceCommandID(cmd.OrderID); e.ID != want {
			t.Errorf("order.place of order %d at %d/%d has the id %q, want %q", cmd.OrderID, r.Partition, r.Offset, e.ID, want)
		}
		p, ok := out[e.ID]
		if !ok {
			out[e.ID] = &publishedPlace{cmd: cmd, time: e.Time, partition: r.Partition, copies: 1}
			continue
		}
		if p.cmd != cmd || p.time != e.Time || p.partition != r.Partition {
			t.Errorf("command %s published twice with different content: %+v at %d on partition %d, then %+v at %d on partition %d",
				e.ID, p.cmd, p.time, p.partition, cmd, e.Time, r.Partition)
		}
		p.copies++
	}
	return out
}

// storedOrder is an order row: what the command must name and what it
// reserves.
type storedOrder struct {
	account  int64
	reserved decimal.Decimal
}

func storedOrders(t *testing.T, h *harness) map[int64]storedOrder {
	t.Helper()
	rows, err := h.pool.Query(t.Context(), `SELECT order_id, account_id, reserved FROM orders`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := make(map[int64]storedOrder)
	for rows.Next() {
		var id int64
		var o storedOrder
		if err := rows.Scan(&id, &o.account, &o.reserved); err != nil {
			t.Fatal(err)
		}
		out[id] = o
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkAcknowledged checks that every acknowledged order is stored and
// published, and that acknowledgements came from both processes.
func checkAcknowledged(t *testing.T, acked []int64, lastBeforeKill int64, published map[string]*publishedPlace, stored map[int64]storedOrder) {
	t.Helper()
	before, after := 0, 0
	seen := make(map[int64]bool)
	for _, id := range acked {
		if seen[id] {
			t.Errorf("order id %d acknowledged twice", id)
		}
		seen[id] = true
		if _, ok := published[orderentry.PlaceCommandID(id)]; !ok {
			t.Errorf("order %d was acknowledged but its order.place was never published", id)
		}
		if _, ok := stored[id]; !ok {
			t.Errorf("order %d was acknowledged but is not stored", id)
		}
		if id <= lastBeforeKill {
			before++
		} else {
			after++
		}
	}
	if before == 0 || after == 0 {
		t.Errorf("%d orders acknowledged before the kill and %d after the restart; the test must span the kill", before, after)
	}
}

// checkStoredArePublished checks that stored orders and published
// commands are the same set: nothing reserved without being published,
// nothing published without being stored.
func checkStoredArePublished(t *testing.T, stored map[int64]storedOrder, published map[string]*publishedPlace) {
	t.Helper()
	for id, o := range stored {
		p, ok := published[orderentry.PlaceCommandID(id)]
		switch {
		case !ok:
			t.Errorf("order %d is stored (account %d reserves %s) but its order.place was never published", id, o.account, o.reserved)
		case p.cmd.AccountID != o.account:
			t.Errorf("order %d is stored for account %d but its order.place names account %d", id, o.account, p.cmd.AccountID)
		}
	}
	for cmdID, p := range published {
		if _, ok := stored[p.cmd.OrderID]; !ok {
			t.Errorf("%s was published but order %d is not stored", cmdID, p.cmd.OrderID)
		}
	}
}

// checkLockedFunds checks that each account locks exactly what its stored
// orders reserve.
func checkLockedFunds(t *testing.T, h *harness, users []user, stored map[int64]storedOrder) {
	t.Helper()
	reserved := make(map[int64]decimal.Decimal)
	for _, o := range stored {
		reserved[o.account] = reserved[o.account].Add(o.reserved)
	}
	for _, u := range users {
		if locked := h.locked(u.preconf); !locked.Equal(reserved[u.preconf]) {
			t.Errorf("account %d locks %s but its stored orders reserve %s", u.preconf, locked, reserved[u.preconf])
		}
	}
	if len(reserved) != len(users) {
		t.Errorf("stored orders of %d accounts, want %d", len(reserved), len(users))
	}
}
