package ingress_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/ingress"
	"blockspace.exchange/ingress/internal/login"
	"blockspace.exchange/platform/auth"
	"blockspace.exchange/platform/environment"
	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/kafka/kafkatest"
	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/platform/proctest"
	"blockspace.exchange/settler/schema"
	"blockspace.exchange/topics"
)

func TestMain(m *testing.M) { pgtest.Main(m, kafkatest.StopShared, proctest.RemoveBuilds) }

// harness is one ingress service on a fresh database and the test binary's
// shared Apache Kafka broker, emptied for the test (or a broker of its own,
// see harnessOptions.ownBroker; kafkatest), running its background work (outbox
// relay, market catalog) until the test ends.
type harness struct {
	t       testing.TB
	pool    *pgxpool.Pool
	svc     *ingress.Service
	handler http.Handler
	key     *ecdsa.PrivateKey // signs access tokens
	signer  *login.Signer
	brokers []string
	kcl     *kgo.Client // the service's client
	// kafkaDown is what the service's Kafka health check reports.
	kafkaDown atomic.Bool
	// broker, of a harness with ownBroker set, can be stopped, killed and
	// started again on its ports and data.
	broker *kafkatest.Broker
}

// harnessOptions change the defaults of newHarness.
type harnessOptions struct {
	// before runs with the broker up and the topics created, before the
	// service starts (records the market catalog must find at start).
	before func(h *harness)
	orders ingress.OrderEntryConfig
	outbox ingress.OutboxConfig
	// ownBroker starts a broker of the test's own, which the test may
	// stop, kill and start again, instead of taking the shared one.
	ownBroker bool
}

func newHarness(t testing.TB) *harness { return startHarness(t, harnessOptions{}) }

func startHarness(t testing.TB, o harnessOptions) *harness {
	t.Helper()
	h := startBackends(t, o)
	h.startService(o)
	return h
}

// startBackends starts what the service runs against: a fresh database,
// the broker with the topics of the catalog (o.before runs once they
// exist) and a client of it, and the key that signs the test's access
// tokens. The service itself is not started.
func startBackends(t testing.TB, o harnessOptions) *harness {
	t.Helper()
	ctx := t.Context()
	h := &harness{t: t, pool: pgtest.New(t, schema.Migrations())}
	if o.ownBroker {
		h.broker = kafkatest.StartBroker(t)
		h.brokers = h.broker.Addrs()
	} else {
		h.brokers = kafkatest.Shared(t)
	}
	cl, err := kafka.NewClient(kafka.Config{Brokers: h.brokers})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	h.kcl = cl
	if err := kafka.EnsureTopics(ctx, kadm.NewClient(cl), topics.Catalog()); err != nil {
		t.Fatal(err)
	}
	if o.before != nil {
		o.before(h)
	}
	h.key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	h.signer = login.NewSigner(h.key, auth.KeyID(&h.key.PublicKey), time.Hour)
	return h
}

// startService starts the ingress service in the test process, running
// its background work until the test ends.
func (h *harness) startService(o harnessOptions) {
	t := h.t
	t.Helper()
	ctx := t.Context()
	env, _ := environment.Lookup("dev")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if o.orders.AnswerWait == 0 {
		// No matcher runs here: answers do not wait for one, unless a
		// test writes its decisions.
		o.orders.AnswerWait = -1
	}
	var err error
	h.svc, err = ingress.New(ctx, ingress.Config{Environment: env, MaxInFlight: 4096, Orders: o.orders, Outbox: o.outbox,
		Auth: ingress.AuthConfig{
			SigningKey: h.key, Product: "Test", AccessTTL: time.Hour, SessionTTL: time.Hour, NonceTTL: time.Minute,
			RatePerIP: ingress.Rate{PerMinute: 1000, Burst: 1000}, RatePerAddress: ingress.Rate{PerMinute: 1000, Burst: 1000}, KeysRefresh: time.Minute,
		}}, ingress.Deps{Pool: h.pool, Logger: log, DBErr: func() error { return nil }, Kafka: h.kcl, KafkaErr: h.kafkaErr})
	if err != nil {
		t.Fatal(err)
	}
	h.handler = h.svc.Handler()
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- h.svc.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("service Run: %v", err)
		}
	})
}

// stopBroker shuts the broker down in order (it flushes its log and
// hands nothing over: it is the only node).
func (h *harness) stopBroker() {
	h.t.Helper()
	if err := h.broker.Node().Stop(time.Minute); err != nil {
		h.t.Fatal(err)
	}
}

// killBroker ends the broker's process at once (SIGKILL): no controlled
// shutdown, and requests in flight get no answer.
func (h *harness) killBroker() {
	h.t.Helper()
	if err := h.broker.Node().Kill(); err != nil {
		h.t.Fatal(err)
	}
}

// startBroker starts the stopped or killed broker again on its ports and
// data, and returns once it serves.
func (h *harness) startBroker() {
	h.t.Helper()
	if err := h.broker.Node().Start(h.t.Context()); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) kafkaErr() error {
	if h.kafkaDown.Load() {
		return errors.New("kafka is down (test)")
	}
	return nil
}

type user struct {
	id, current, preconf int64
	token                string
}

// newUser creates a user holding funds in its current account.
func (h *harness) newUser(addr, funds string) user {
	h.t.Helper()
	ctx := h.t.Context()
	var u user
	err := h.pool.QueryRow(ctx, `INSERT INTO users (address) VALUES ($1) RETURNING user_id`, addr).Scan(&u.id)
	if err == nil {
		err = h.pool.QueryRow(ctx, `INSERT INTO accounts (user_id, type, name) VALUES ($1, 1, 'c') RETURNING account_id`, u.id).Scan(&u.current)
	}
	if err == nil {
		err = h.pool.QueryRow(ctx, `INSERT INTO accounts (user_id, type, name) VALUES ($1, 2, 'p') RETURNING account_id`, u.id).Scan(&u.preconf)
	}
	if err == nil {
		_, err = h.pool.Exec(ctx, `INSERT INTO account_balances (account_id, token_id, quantity) VALUES ($1, 1, $2::numeric), ($3, 1, 0)`, u.current, funds, u.preconf)
	}
	if err != nil {
		h.t.Fatal(err)
	}
	tok, err := h.signer.Issue(auth.TokenUser{UserID: u.id, Address: addr, Roles: []string{auth.RoleUser}}, 0, time.Now())
	if err != nil {
		h.t.Fatal(err)
	}
	u.token = tok.Token
	return u
}

type answer struct {
	status int
	header http.Header
	body   map[string]any
}

func (h *harness) do(method, path, token, contentType, body string) answer {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	rec := httptest.NewRecorder()
	h.handler.ServeHTTP(rec, req)
	var out map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &out)
	return answer{rec.Code, rec.Header(), out}
}

func code(a answer) float64 {
	c, _ := a.body["code"].(float64)
	return c
}

// records reads every record of topic published so far (up to the end
// offsets the broker lists now).
func (h *harness) records(topic string) []*kgo.Record {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(h.t.Context(), 30*time.Second)
	defer cancel()
	return kafkatest.ReadToEnd(ctx, h.t, h.kcl, topic)
}
