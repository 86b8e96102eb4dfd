package live

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/query-api/internal/tradingreads"
	"blockspace.exchange/settler/schema"
	"blockspace.exchange/topics"
)

// queryExample is one request and answer of docs/websocket.md's "Query
// answers" section.
type queryExample struct {
	request, answer string
}

// queryExamples reads the `>` request and `<` answer lines of the code
// block under "## Query answers" in docs/websocket.md.
func queryExamples(t *testing.T) []queryExample {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "websocket.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Query answers\n")
	if !ok {
		t.Fatal(`docs/websocket.md has no "## Query answers" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var out []queryExample
	for _, line := range strings.Split(section, "\n") {
		switch {
		case strings.HasPrefix(line, "> "):
			out = append(out, queryExample{request: line[2:]})
		case strings.HasPrefix(line, "< ") && len(out) > 0 && out[len(out)-1].answer == "":
			out[len(out)-1].answer = line[2:]
		}
	}
	return out
}

// TestDocumentedQueryAnswers sends each request of docs/websocket.md's
// "Query answers" to a server holding the state the examples describe
// (a user's position in Postgres, a resting order, a trade, the open
// markets of slot 412) and holds every documented answer to the shape of
// the real one: the same members at every depth, with the same JSON types.
// Every query with a documented shape is there.
func TestDocumentedQueryAnswers(t *testing.T) {
	examples := queryExamples(t)
	var queries []string
	for _, ex := range examples {
		var req struct {
			Args []struct {
				QueryType string `json:"queryType"`
			} `json:"args"`
		}
		if err := json.Unmarshal([]byte(ex.request), &req); err != nil || len(req.Args) != 1 {
			t.Fatalf("documented request %s: %v", ex.request, err)
		}
		queries = append(queries, req.Args[0].QueryType)
	}
	for _, q := range []string{"markets", "recentTrades", "openOrders", "positions"} {
		if !slices.Contains(queries, q) {
			t.Errorf("docs/websocket.md shows no %s answer", q)
		}
	}

	h, token := exampleState(t)
	c := h.dial(nil)
	c.login(token)
	for _, ex := range examples {
		c.send(ex.request)
		real := c.next()
		if want, got := shapeOf(t, ex.answer), shapeOf(t, real.raw); !slices.Equal(want, got) {
			t.Errorf("%s\ndocumented: %s\nreal:       %s\ndocumented shape %v\nreal shape       %v", ex.request, ex.answer, real.raw, want, got)
		}
	}
}

// exampleState is the state the examples describe: slot 412's markets
// open, user 7 (account 70) with a whole-block position bought at 0.5 and
// a resting preconf bid, one whole-block trade.
func exampleState(t *testing.T) (*harness, string) {
	t.Helper()
	pool := pgtest.New(t, schema.Migrations())
	var user, acct int64
	if err := pool.QueryRow(t.Context(), `INSERT INTO users (address) VALUES ('0x00000000000000000000000000000000000000a1') RETURNING user_id`).Scan(&user); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(t.Context(), `INSERT INTO accounts (user_id, type, name) VALUES ($1, 2, 'p') RETURNING account_id`, user).Scan(&acct); err != nil {
		t.Fatal(err)
	}
	wb, pc := topics.InstrumentID(topics.WholeBlock, 412), topics.InstrumentID(topics.InclusionPreconf, 412)
	if _, err := pool.Exec(t.Context(), `INSERT INTO positions (account_id, instrument_id, market_id, slot, quantity, locked, average_price)
		VALUES ($1, $2, $3, 412, 1, 0, 0.5)`, acct, wb, topics.MarketID(topics.WholeBlock, 412)); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, Config{}, tradingreads.New(pool))
	h.open(412, topics.WholeBlock)
	h.open(412, topics.InclusionPreconf)
	bid := orderEvent(user, 4120000000017, pc, true, "0.000000002", "21000", "0", topics.OrderStatusOnBook)
	bid.AccountID = acct
	h.apply(topics.TypeOrderAccepted, bid)
	h.apply(topics.TypeTradeExecuted, topics.Fill{TradeID: 4120000000001, InstrumentID: wb, Slot: 412, Price: "0.5",
		Quantity: "1", PreconfQuantity: "18000000", Side: true})
	return h, h.token(user, time.Now().Add(time.Hour))
}

// shapeOf lists every member path of a JSON text with its JSON type,
// sorted; an array's elements share the path "[]".
func shapeOf(t *testing.T, text string) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	set := map[string]bool{}
	walkShape(v, "", set)
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func walkShape(v any, path string, set map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		set[path+":object"] = true
		for k, e := range v {
			walkShape(e, path+"."+k, set)
		}
	case []any:
		set[path+":array"] = true
		for _, e := range v {
			walkShape(e, path+"[]", set)
		}
	default:
		set[fmt.Sprintf("%s:%T", path, v)] = true
	}
}
