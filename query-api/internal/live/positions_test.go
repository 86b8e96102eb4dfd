package live

import (
	"encoding/json"
	"testing"
	"time"

	"blockspace.exchange/platform/kafka/kafkatest"
	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/query-api/internal/tradingreads"
	"blockspace.exchange/settler/schema"
)

func TestMain(m *testing.M) { pgtest.Main(m, kafkatest.StopShared) }

// The positions query reads the caller's positions from the settler's
// table, never another user's, filtered by family and instrument, newest
// market (latest slot) first whatever its family.
func TestPositionsQuery(t *testing.T) {
	pool := pgtest.New(t, schema.Migrations())
	ctx := t.Context()
	account := func(addr string) (user, acct int64) {
		t.Helper()
		if err := pool.QueryRow(ctx, `INSERT INTO users (address) VALUES ($1) RETURNING user_id`, addr).Scan(&user); err != nil {
			t.Fatal(err)
		}
		if err := pool.QueryRow(ctx, `INSERT INTO accounts (user_id, type, name) VALUES ($1, 2, 'p') RETURNING account_id`, user).Scan(&acct); err != nil {
			t.Fatal(err)
		}
		return user, acct
	}
	alice, aliceAcct := account("0x00000000000000000000000000000000000000a1")
	_, bobAcct := account("0x00000000000000000000000000000000000000b2")
	for _, p := range []struct {
		acct       int64
		instrument string
		market     int64
		qty, lock  string
		avg        any
	}{
		{aliceAcct, "ETH-WB-7", 2_000_000_000_007, "1", "1", "2.5"},
		{aliceAcct, "ETH-PC-7", 1_000_000_000_007, "21000", "0", nil},
		{aliceAcct, "ETH-PC-9", 1_000_000_000_009, "21000", "0", nil},
		{bobAcct, "ETH-WB-8", 2_000_000_000_008, "1", "0", "3"},
	} {
		if _, err := pool.Exec(ctx, `INSERT INTO positions (account_id, instrument_id, market_id, slot, quantity, locked, average_price)
			VALUES ($1, $2, $3, $3 % 1000000000000, $4, $5, $6)`, p.acct, p.instrument, p.market, p.qty, p.lock, p.avg); err != nil {
			t.Fatal(err)
		}
	}
	h := newHarness(t, Config{}, tradingreads.New(pool))
	c := h.dial(nil)
	c.login(h.token(alice, time.Now().Add(time.Hour)))
	for _, tc := range []struct {
		arg  map[string]string
		want []string
	}{
		{map[string]string{"queryType": "positions"}, []string{"ETH-PC-9", "ETH-WB-7", "ETH-PC-7"}},
		{map[string]string{"queryType": "positions", "marketType": "wholeBlock"}, []string{"ETH-WB-7"}},
		{map[string]string{"queryType": "positions", "instrumentId": "ETH-PC-7"}, []string{"ETH-PC-7"}},
		{map[string]string{"queryType": "positions", "instrumentId": "ETH-WB-8"}, nil},
	} {
		c.send(map[string]any{"op": "query", "args": []any{tc.arg}})
		m := c.next()
		var got []tradingreads.OwnPosition
		if err := json.Unmarshal(m.P, &got); err != nil || m.Q != "positions" {
			t.Fatalf("%v: %s", tc.arg, m.raw)
		}
		if len(got) != len(tc.want) {
			t.Fatalf("%v: %+v, want %v", tc.arg, got, tc.want)
		}
		for i, p := range got {
			if p.InstrumentID != tc.want[i] || p.AccountID != aliceAcct {
				t.Fatalf("%v: %+v, want %v", tc.arg, got, tc.want)
			}
		}
		if len(got) > 0 && got[0].InstrumentID == "ETH-WB-7" &&
			(got[0].Available.String() != "0" || got[0].Locked.String() != "1" || got[0].AveragePrice.Decimal.String() != "2.5") {
			t.Fatalf("whole-block position: %+v", got[0])
		}
	}
}
