package validators

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/ingress/internal/beacon"
	"blockspace.exchange/platform/auth"
	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/kafka/kafkatest"
	"blockspace.exchange/platform/outbox"
	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/settler/schema"
	"blockspace.exchange/topics"
)

func TestMain(m *testing.M) { pgtest.Main(m, kafkatest.StopShared) }

const chainID = 1337

// knownKeys is a beacon that knows every key but unknown.
type knownKeys struct{ unknown string }

func (k knownKeys) Validator(_ context.Context, pubkey string) (beacon.Validator, bool, error) {
	if pubkey == k.unknown {
		return beacon.Validator{}, false, nil
	}
	return beacon.Validator{Index: 42, Status: "active_ongoing"}, true, nil
}

type user struct {
	id   int64
	addr string
}

func newUser(t *testing.T, pool *pgxpool.Pool, addr string) user {
	t.Helper()
	var id int64
	if err := pool.QueryRow(t.Context(), `INSERT INTO users (address) VALUES ($1) RETURNING user_id`, addr).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return user{id, addr}
}

func key(t *testing.T, seed byte) (secret func(addr string) (string, string)) {
	t.Helper()
	sk, err := SecretKey([]byte(strings.Repeat(string(rune('a'+seed)), 32)))
	if err != nil {
		t.Fatal(err)
	}
	return func(addr string) (string, string) {
		a, err := ParseAddress(addr)
		if err != nil {
			t.Fatal(err)
		}
		return Sign(sk, chainID, a)
	}
}

type answer struct {
	Status  int
	Success bool `json:"success"`
	Code    int  `json:"code"`
	Data    struct {
		Results []Result `json:"results"`
	} `json:"data"`
}

func TestRegistration(t *testing.T) {
	pool := pgtest.New(t, schema.Migrations())
	alice := newUser(t, pool, "0x00000000000000000000000000000000000a11ce")
	bob := newUser(t, pool, "0x0000000000000000000000000000000000000b0b")
	k1, k2, k3 := key(t, 1), key(t, 2), key(t, 3)
	unknownPK, unknownSig := k3(alice.addr)
	_, brokers := kafkatest.Start(t)
	cl, err := kafka.NewClient(kafka.Config{Brokers: brokers})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	svc := New(chainID, pool, knownKeys{unknown: unknownPK}, outbox.New(pool, cl, slog.New(slog.DiscardHandler)), slog.New(slog.DiscardHandler))
	as := map[int64]string{alice.id: alice.addr, bob.id: bob.addr}
	var current int64
	svc.caller = func(*gin.Context) *auth.Claims {
		return &auth.Claims{User: auth.TokenUser{UserID: current, Address: as[current]}}
	}
	engine, err := httpx.NewEngine(httpx.Config{Service: "test", Logger: slog.New(slog.DiscardHandler), MaxInFlight: 8})
	if err != nil {
		t.Fatal(err)
	}
	svc.Register(engine, func(c *gin.Context) { c.Next() })

	pk1, sig1 := k1(alice.addr)
	_, sigForBob := k1(bob.addr)
	pk2, _ := k2(alice.addr)
	item := func(pk, sig string) string { return `{"pubkey":"` + pk + `","signature":"` + sig + `"}` }

	tests := []struct {
		name   string
		as     int64
		path   string
		body   string
		status int
		code   int // application code when status is not 200
		result int
	}{
		{"verify only: valid", alice.id, "/verify/batch", "[" + item(pk1, sig1) + "]", 200, 0, ResultOK},
		{"valid", alice.id, "/register", item(pk1, sig1), 200, 0, ResultOK},
		{"duplicate by the same user", alice.id, "/register", item(pk1, sig1), 200, 0, ResultAlreadyRegistered},
		{"duplicate by another user", bob.id, "/register", item(pk1, sigForBob), 200, 0, ResultAlreadyRegistered},
		{"signed for another address", bob.id, "/register", item(pk2, sig1), 200, 0, ResultInvalidSignature},
		{"wrong key", alice.id, "/register", item(pk2, sig1), 200, 0, ResultInvalidSignature},
		{"not found at the beacon", alice.id, "/register", item(unknownPK, unknownSig), 200, 0, ResultNotFound},
		{"malformed pubkey hex", alice.id, "/register", item("0xzz"+pk2[4:], sig1), 400, 1001, 0},
		{"malformed signature hex", alice.id, "/register", item(pk2, sig1[:50]), 400, 1001, 0},
		{"pubkey not a curve point", alice.id, "/register", item("0x"+strings.Repeat("ab", 48), sig1), 200, 0, ResultInvalidSignature},
		{"empty batch", alice.id, "/verify/batch", "[]", 400, 1001, 0},
		{"deregister another user's key", bob.id, "/deregister", `{"pubkeys":["` + pk1 + `"]}`, 200, 0, ResultNotFound},
		{"deregister", alice.id, "/deregister", `{"pubkeys":["` + pk1 + `"]}`, 200, 0, ResultOK},
		{"register again after deregistering", bob.id, "/register", item(pk1, sigForBob), 200, 0, ResultOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			current = tc.as
			req := httptest.NewRequest(http.MethodPost, "/api/v1/validator"+tc.path, strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			engine.ServeHTTP(rec, req)
			var a answer
			if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil {
				t.Fatalf("body %s: %v", rec.Body, err)
			}
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			if tc.status != 200 {
				if a.Code != tc.code {
					t.Fatalf("code %d, want %d", a.Code, tc.code)
				}
				return
			}
			if !a.Success || len(a.Data.Results) != 1 || a.Data.Results[0].Result != tc.result {
				t.Fatalf("answer %s, want result %d", rec.Body, tc.result)
			}
		})
	}
	var owner int64
	if err := pool.QueryRow(t.Context(), `SELECT user_id FROM validators WHERE pubkey = $1`, pk1).Scan(&owner); err != nil || owner != bob.id {
		t.Fatalf("owner %d (%v), want bob %d", owner, err, bob.id)
	}

	// Every change of a registration is on the validators topic, keyed by
	// the key, in order; refused items wrote nothing.
	type change struct {
		typ  string
		user int64
		addr string
	}
	want := []change{
		{topics.TypeValidatorRegistered, alice.id, alice.addr},
		{topics.TypeValidatorDeregistered, alice.id, alice.addr},
		{topics.TypeValidatorRegistered, bob.id, bob.addr},
	}
	recs := readAll(t, brokers, len(want))
	ids := map[string]bool{}
	for i, r := range recs {
		e, err := kafka.DecodeRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		v, err := topics.DecodeValidatorRegistered(e)
		if err != nil {
			t.Fatal(err)
		}
		if got := (change{e.Type, v.UserID, v.Address}); got != want[i] || string(r.Key) != pk1 || v.Pubkey != pk1 || v.ValidatorIndex != 42 {
			t.Errorf("record %d: %+v key %s, want %+v of %s", i, v, r.Key, want[i], pk1)
		}
		if ids[e.ID] {
			t.Errorf("record %d repeats id %s", i, e.ID)
		}
		ids[e.ID] = true
	}
	var left int
	if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM outbox`).Scan(&left); err != nil || left != 0 {
		t.Errorf("%d outbox rows left after publishing (%v)", left, err)
	}
}

// readAll waits until the validators topic has n records, then reads it
// up to the broker's end offsets: the requests that published were all
// answered before, so a duplicate publication would be there too, and
// there must be exactly n.
func readAll(t *testing.T, brokers []string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kafka.NewClient(kafka.Config{Brokers: brokers}, kgo.ConsumeTopics(topics.Validators))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for got := 0; got < n; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d validator records, want %d", got, n)
		}
		got += fs.NumRecords()
	}
	out := kafkatest.ReadToEnd(ctx, t, cl, topics.Validators)
	if len(out) != n {
		t.Fatalf("%d validator records, want %d", len(out), n)
	}
	return out
}

// The message is fixed by docs/validators.md; a change breaks every
// client's signer.
func TestMessageLayout(t *testing.T) {
	var a [20]byte
	a[19] = 1
	m := Message(1, a)
	if len(m) != 52 || m[51] != 1 {
		t.Fatalf("message %x", m)
	}
	if d1, d2 := Domain(1), Domain(560048); d1 == d2 {
		t.Fatal("domains of two chains are equal")
	}
}
