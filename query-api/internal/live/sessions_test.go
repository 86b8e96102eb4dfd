package live

import (
	"strings"
	"testing"
	"time"

	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/settler/schema"
	"blockspace.exchange/topics"
)

// A login session revoked in Postgres (logout, or theft detection) ends
// the private subscriptions of every socket logged in with a token of
// that session, within a session check; another session of the same
// user goes on.
func TestRevokedSessionEndsPrivateSubscriptions(t *testing.T) {
	pool := pgtest.New(t, schema.Migrations())
	ctx := t.Context()
	var user, kept, revoked int64
	if err := pool.QueryRow(ctx, `INSERT INTO users (address) VALUES ('0x00000000000000000000000000000000000000a1') RETURNING user_id`).Scan(&user); err != nil {
		t.Fatal(err)
	}
	for _, id := range []*int64{&kept, &revoked} {
		if err := pool.QueryRow(ctx, `INSERT INTO sessions (user_id, user_agent, expires_at) VALUES ($1, 'ua', now() + interval '1 day') RETURNING session_id`,
			user).Scan(id); err != nil {
			t.Fatal(err)
		}
	}
	h := newHarnessWith(t, Config{AuthCheck: 50 * time.Millisecond}, Deps{Sessions: PostgresSessions{Pool: pool}})
	h.open(7, topics.WholeBlock)
	exp := time.Now().Add(time.Hour)
	sockets := map[int64]*client{}
	for _, sid := range []int64{kept, revoked} {
		c := h.dial(nil)
		c.login(h.sessionToken(user, sid, exp))
		c.subscribe(map[string]string{"channel": "accountOrderUpdate", "marketType": "wholeBlock"})
		c.expect("subscribe", 0)
		sockets[sid] = c
	}
	if _, err := pool.Exec(ctx, `UPDATE sessions SET revoked_at = now(), revoke_reason = 'logout' WHERE session_id = $1`, revoked); err != nil {
		t.Fatal(err)
	}
	if m := sockets[revoked].expect("error", httpx.CodeAuth); !strings.Contains(m.Msg, "revoked") || !strings.Contains(m.Msg, ChannelOrders) {
		t.Fatalf("revoked session: %s", m.raw)
	}
	h.apply(topics.TypeOrderAccepted, orderEvent(user, 100, wb7, false, "2.5", "1", "0", topics.OrderStatusOnBook))
	if got := sockets[kept].upTo(); len(got) != 1 || got[0].E != ChannelOrders {
		t.Fatalf("the other session: %v", got)
	}
	if got := sockets[revoked].upTo(); len(got) != 0 {
		t.Fatalf("the revoked session still receives: %v", got)
	}
}
