package process

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"blockspace.exchange/platform/config"
	"blockspace.exchange/platform/kafka/kafkatest"
	"blockspace.exchange/platform/poll"
	"blockspace.exchange/platform/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m, kafkatest.StopShared) }

func TestReadCommonNamesEveryMissingVariable(t *testing.T) {
	r := config.FromMap(map[string]string{"ENVIRONMENT": "nowhere", "LOG_LEVEL": "loud", "KAFKA_COMPRESSION": "brotli"})
	ReadCommon(r, Needs{Postgres: true, Kafka: true})
	err := r.Err()
	if err == nil {
		t.Fatal("no error for missing DATABASE_URL and KAFKA_BROKERS")
	}
	for _, name := range []string{"DATABASE_URL", "KAFKA_BROKERS", "ENVIRONMENT", "LOG_LEVEL", "KAFKA_COMPRESSION"} {
		if !contains(err.Error(), name) {
			t.Errorf("error does not name %s: %v", name, err)
		}
	}
}

// TestReadCommonTakesTheDevClock: a service on the dev chain takes the
// genesis every process of the deployment shares and its slot length;
// other environments keep their own clock.
func TestReadCommonTakesTheDevClock(t *testing.T) {
	r := config.FromMap(map[string]string{"ENVIRONMENT": "dev", "DEV_GENESIS": "1795760000", "SLOT_LENGTH": "500ms"})
	c := ReadCommon(r, Needs{})
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if !c.Environment.Genesis.Equal(time.Unix(1795760000, 0)) || c.Environment.SlotLength != 500*time.Millisecond || c.Environment.ChainID != 1337 {
		t.Fatalf("dev environment %+v", c.Environment)
	}
	r = config.FromMap(map[string]string{"ENVIRONMENT": "dev", "DEV_GENESIS": "yesterday"})
	ReadCommon(r, Needs{})
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), `DEV_GENESIS: genesis "yesterday"`) {
		t.Errorf("DEV_GENESIS=yesterday: %v, want an error naming it", err)
	}
	// Without a genesis a service runs, and only a slot clock refuses it.
	r = config.FromMap(map[string]string{"ENVIRONMENT": "dev"})
	c = ReadCommon(r, Needs{})
	if r.Err() != nil || c.Environment.ValidateClock() == nil {
		t.Errorf("dev without DEV_GENESIS: %v, clock %v; want no configuration error and a clock that refuses to run", r.Err(), c.Environment.ValidateClock())
	}
	r = config.FromMap(map[string]string{"ENVIRONMENT": "hoodi", "SLOT_LENGTH": "500ms"})
	if c := ReadCommon(r, Needs{}); c.Environment.SlotLength != 12*time.Second || r.Err() != nil {
		t.Fatalf("hoodi: %+v %v", c.Environment, r.Err())
	}
}

func TestBootServesReadinessAndStopsCleanly(t *testing.T) {
	pool := pgtest.New(t, nil)
	common := ReadCommon(config.FromMap(map[string]string{
		"DATABASE_URL": pool.Config().ConnString(), "KAFKA_BROKERS": kafkatest.Shared(t)[0], "ADMIN_ADDR": "127.0.0.1:0",
	}), Needs{Postgres: true, Kafka: true})
	ctx, cancel := context.WithCancel(context.Background())
	p, err := Boot(ctx, "test", common, Needs{Postgres: true, Kafka: true})
	if err != nil {
		t.Fatal(err)
	}
	admin := "http://" + p.adminLn.Addr().String()
	loopStopped := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- p.Run(ctx, nil, func(ctx context.Context) error { <-ctx.Done(); close(loopStopped); return nil })
	}()
	if code := getStatus(t, admin+"/readyz"); code != 200 {
		t.Errorf("readyz = %d", code)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	select {
	case <-loopStopped:
	default:
		t.Error("Run returned before its loop stopped")
	}
	if p.Pool != nil || p.Kafka != nil {
		t.Error("connections not closed")
	}
}

func getStatus(t *testing.T, url string) int {
	t.Helper()
	for i := 0; ; i++ {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 || i == 100 {
			return resp.StatusCode
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// Readiness follows the Kafka broker: it fails, naming kafka, once the
// broker is killed, and holds again once the broker is back on the same
// address, with the same client.
func TestReadinessFollowsTheKafkaBroker(t *testing.T) {
	t.Parallel() // a broker of its own, killed: beside the tests on the shared one
	pool := pgtest.New(t, nil)
	broker := kafkatest.StartBroker(t)
	common := ReadCommon(config.FromMap(map[string]string{
		"DATABASE_URL": pool.Config().ConnString(), "KAFKA_BROKERS": broker.Addrs()[0], "ADMIN_ADDR": "127.0.0.1:0",
	}), Needs{Postgres: true, Kafka: true})
	ctx, cancel := context.WithCancel(t.Context())
	p, err := Boot(ctx, "test", common, Needs{Postgres: true, Kafka: true})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx, nil) }()
	defer func() { cancel(); <-done }()
	admin := "http://" + p.adminLn.Addr().String() + "/readyz"

	waitReady(t, admin, http.StatusOK, "")
	if err := broker.Node().Kill(); err != nil {
		t.Fatal(err)
	}
	waitReady(t, admin, http.StatusServiceUnavailable, `"kafka"`)
	if err := broker.Node().Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitReady(t, admin, http.StatusOK, "")
}

// waitReady asks url until it answers code with a body holding want.
func waitReady(t *testing.T, url string, code int, want string) {
	t.Helper()
	var got int
	var body []byte
	poll.Before(t, fmt.Sprintf("%s to answer %d with %s", url, code, want), time.Now().Add(poll.Timeout), func() bool {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		got = resp.StatusCode
		return got == code && strings.Contains(string(body), want)
	}, func() string { return fmt.Sprintf("%d %s", got, body) })
}
