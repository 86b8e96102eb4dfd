package devstack

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"blockspace.exchange/deploy/devchain"
	"blockspace.exchange/platform/api"
	"blockspace.exchange/platform/config"
	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/platform/kafka/kafkatest"
	"blockspace.exchange/platform/poll"
	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/topics"
)

// running is a stack started by a test and the way to stop it.
type running struct {
	*Stack
	stop func() error
}

func startStack(t *testing.T, dataDir string) *running {
	t.Helper()
	return startStackWith(t, dataDir, nil)
}

// startStackWith starts a stack with extra environment variables.
func startStackWith(t *testing.T, dataDir string, env map[string]string) *running {
	t.Helper()
	vars := map[string]string{
		"DATA_DIR": dataDir, "HTTP_ADDR": "127.0.0.1:0", "ADMIN_ADDR": "127.0.0.1:0", "KAFKA_ADDR": "127.0.0.1:0",
		"ORIGINATOR_ADDR": "127.0.0.1:0", "SEARCHER_ADDR": "127.0.0.1:0", "ORDERFLOW_ADDR": "127.0.0.1:0",
		"DEV_BLOCK_INTERVAL": "500ms", "CHAIN_ADDR": "127.0.0.1:0",
	}
	for k, v := range env {
		vars[k] = v
	}
	if vars["KAFKA_BROKERS"] == "" && vars["EMBEDDED_KAFKA"] == "" {
		vars["KAFKA_BROKERS"] = strings.Join(kafkatest.Shared(t), ",")
	}
	if _, set := vars["DATABASE_URL"]; !set {
		vars["DATABASE_URL"] = sharedDatabase(t)
	}
	cfg, err := ConfigFromEnv(config.FromMap(vars))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	// The stack's log is kept and shown when the test fails: it says why
	// a stack stopped answering.
	logs := &lockedBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the dev stack's log ends:\n%s", tail(logs.String(), 80))
		}
	})
	s, err := Start(ctx, cfg, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		err := s.Run(ctx)
		if err != nil && ctx.Err() == nil {
			// A stack that stops by itself serves nothing more: say why,
			// as the tests only see its endpoints fail.
			t.Logf("the dev stack stopped by itself: %v", err)
		}
		done <- err
	}()
	r := &running{Stack: s}
	var stopped bool
	r.stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(poll.Timeout):
			// A stack that cannot stop would hold the test binary until
			// its timeout, with nothing said of why.
			t.Errorf("the dev stack did not stop within %s of its cancel", poll.Timeout)
			return nil
		}
	}
	t.Cleanup(func() { _ = r.stop() })
	return r
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// privatePostgres is the environment of a stack that starts a PostgreSQL
// cluster of its own in its data directory, as make run does, for a test
// that stops it or reads its process.
var privatePostgres = map[string]string{"DATABASE_URL": ""}

// sharedDatabase returns the URL of a new empty database on the test
// binary's shared PostgreSQL server, dropped when t ends. A stack started
// on it migrates it, as it does its private cluster, and takes no
// cluster start of its own.
func sharedDatabase(t *testing.T) string {
	t.Helper()
	databases.Lock()
	defer databases.Unlock()
	if url, ok := databases.m[t]; ok {
		return url // a test that restarts its stack finds its data
	}
	url := pgtest.New(t, nil).Config().ConnString()
	databases.m[t] = url
	t.Cleanup(func() {
		databases.Lock()
		defer databases.Unlock()
		delete(databases.m, t)
	})
	return url
}

// databases holds each test's database on the shared server.
var databases = struct {
	sync.Mutex
	m map[*testing.T]string
}{m: map[*testing.T]string{}}

type reply struct {
	status int
	header http.Header
	body   struct {
		Success bool            `json:"success"`
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
}

func call(t *testing.T, method, url string) reply {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	r := reply{status: resp.StatusCode, header: resp.Header}
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &r.body); err != nil && !strings.Contains(resp.Header.Get("Content-Type"), "yaml") && !strings.Contains(url, "/metrics") {
		t.Fatalf("%s %s: not JSON: %s", method, url, raw)
	}
	return r
}

func TestStackServesPublicEndpointsThroughOneBase(t *testing.T) {
	t.Parallel()
	s := startStack(t, worldTempDir(t))
	base := s.Addresses().REST
	for _, path := range []string{
		"/api/v1/p/network?chainId=1", "/api/v1/p/network?chainId=0x88BB0", "/api/v1/p/tokens", "/api/v1/p/user/fees",
		"/api/v1/p/funding/withdraw/dailyWithdrawLimits",
	} {
		r := call(t, "GET", base+path)
		if r.status != 200 || !r.body.Success || len(r.body.Data) < 3 || r.header.Get("X-Request-ID") == "" {
			t.Errorf("GET %s: %d %+v", path, r.status, r.body)
		}
	}
	// The dev stack deploys the collateral contract on the dev chain.
	if r := call(t, "GET", base+"/api/v1/p/funding/contractAddress"); r.status != 200 || !r.body.Success ||
		!strings.Contains(string(r.body.Data), strings.ToLower(devchain.CollateralAddress().Hex())) {
		t.Errorf("contractAddress of the dev chain: %d %s", r.status, r.body.Data)
	}
	// A write method on a read path crosses the gateway to ingress, which
	// still knows the path.
	if r := call(t, "POST", base+"/api/v1/p/tokens"); r.status != 400 || r.body.Code != 1001 {
		t.Errorf("POST on a GET path: %d %+v", r.status, r.body)
	}
	if r := call(t, "GET", base+"/api/v1/p/network"); r.status != 400 || r.body.Code != 1001 || !strings.Contains(r.body.Message, "chainId") {
		t.Errorf("missing chainId: %d %+v", r.status, r.body)
	}
	admin := s.Addresses().Admin
	if r := call(t, "GET", admin+"/readyz"); r.status != 200 {
		t.Errorf("readyz: %d", r.status)
	}
	resp, err := http.Get(admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(metrics), `http_request_duration_seconds_count{method="GET",route="/api/v1/p/tokens",service="query-api",status="200"} 1`) {
		t.Errorf("metrics do not count the tokens request:\n%s", grep(string(metrics), "http_request"))
	}
	// Every part the stack wires in-process exports its metrics on the
	// one registry (docs/operations.md "Metrics").
	for _, series := range []string{
		`chain_head_block{watcher="deposits"}`, `chain_head_block{watcher="orderflow"}`, `chain_head_block{watcher="withdrawals"}`,
		`orderflow_stream_sockets `, `orderflow_stream_disconnects_total{reason="overflow"}`,
		`orderflow_submissions_total{method="eth_sendBundle",outcome="accepted"}`,
		`orderflow_builder_forwards_total{outcome="accepted"}`, `orderflow_refund_payouts_total{state="paid"}`,
		`withdrawals_open{status="debited"}`, `withdrawals_total{state="confirmed"}`,
		"\npostgres_pool_max_connections ", "\noutbox_pending_rows ", "\nmatcher_books ",
		`settler_batch_retries_total{consumer="ledger"} 0`, `settler_batch_retries_total{consumer="trading"} 0`,
	} {
		if !strings.Contains(string(metrics), series) {
			t.Errorf("metrics lack %q", series)
		}
	}
}

func TestStackAnswers503WhilePostgresIsDown(t *testing.T) {
	t.Parallel()
	s := startStackWith(t, worldTempDir(t), privatePostgres)
	base := s.Addresses().REST
	if r := call(t, "GET", base+"/api/v1/p/tokens"); r.status != 200 {
		t.Fatalf("before: %d", r.status)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.pg.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	var r reply
	poll.Before(t, "a read to answer 503", time.Now().Add(poll.Timeout), func() bool {
		r = call(t, "GET", base+"/api/v1/p/tokens")
		return r.status == 503
	}, func() string { return fmt.Sprintf("%d %+v", r.status, r.body) })
	if r.body.Code != 21 || r.header.Get("Retry-After") == "" || r.header.Get("X-Request-ID") == "" {
		t.Fatalf("503 answer: %+v %v", r.body, r.header)
	}
	if r := call(t, "GET", s.Addresses().Admin+"/readyz"); r.status != 503 {
		t.Errorf("readyz with postgres down: %d", r.status)
	}
}

func TestStackRestartKeepsDataAndAppliesNoMigrationTwice(t *testing.T) {
	t.Parallel()
	dir := worldTempDir(t)
	first := startStackWith(t, dir, privatePostgres)
	ctx := context.Background()
	var applied int
	if err := first.pool.QueryRow(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&applied); err != nil || applied == 0 {
		t.Fatalf("migrations after first start: %d, %v", applied, err)
	}
	if _, err := first.pool.Exec(ctx, `UPDATE fee_schedules SET buy_fee_rate = 0.0042 WHERE user_class = 1`); err != nil {
		t.Fatal(err)
	}
	// A withdrawal whose payout was signed for this start's dev chain.
	if _, err := first.pool.Exec(ctx, `
		WITH u AS (INSERT INTO users (address) VALUES ('0x00000000000000000000000000000000000000d1') RETURNING user_id),
		     a AS (INSERT INTO accounts (user_id, type, name) SELECT user_id, 1, 'c' FROM u RETURNING account_id, user_id)
		INSERT INTO withdraw_requests (user_id, account_id, token_id, chain_id, quantity, fee, to_address, status, tx_hash, raw_tx)
		SELECT user_id, account_id, 1, 1337, 1, 0, '0x00000000000000000000000000000000000000d1', 2, '0xold', '\x01' FROM a`); err != nil {
		t.Fatal(err)
	}
	pgPid := first.pg.Pid()
	if err := first.stop(); err != nil {
		t.Fatalf("clean shutdown: %v", err)
	}
	if err := syscall.Kill(pgPid, 0); err == nil {
		t.Fatalf("postgres %d still runs after shutdown", pgPid)
	}

	second := startStackWith(t, dir, privatePostgres)
	var again int
	if err := second.pool.QueryRow(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&again); err != nil || again != applied {
		t.Fatalf("migrations after restart: %d, want %d (%v)", again, applied, err)
	}
	var stale int
	// (The executor may have signed a new payout on the new chain since.)
	if err := second.pool.QueryRow(ctx, `SELECT count(*) FROM withdraw_requests WHERE raw_tx = '\x01'`).Scan(&stale); err != nil || stale != 0 {
		t.Fatalf("%d payouts signed for the previous dev chain kept (%v)", stale, err)
	}
	r := call(t, "GET", second.Addresses().REST+"/api/v1/p/user/fees")
	if !strings.Contains(string(r.body.Data), `"buyFeeRate":"0.0042"`) {
		t.Errorf("data written before restart is gone: %s", r.body.Data)
	}
	listed, err := kadm.NewClient(second.kcl).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range topics.Catalog() {
		if !listed.Has(tp.Name) {
			t.Errorf("topic %s missing after restart", tp.Name)
		}
	}
}

// TestOpenAPIMatchesServedRoutes fails when a served route is missing from
// the OpenAPI document or the document names a route nobody serves.
func TestOpenAPIMatchesServedRoutes(t *testing.T) {
	t.Parallel()
	s := startStack(t, worldTempDir(t))
	documented, err := api.Routes()
	if err != nil {
		t.Fatal(err)
	}
	key := func(r httpx.Route) string { return r.Method + " " + r.Path }
	doc := map[string]bool{}
	for _, r := range documented {
		doc[key(r)] = true
	}
	served := map[string]bool{}
	for _, r := range s.Routes() {
		served[key(r)] = true
		if !doc[key(r)] {
			t.Errorf("served but not in openapi.yaml: %s", key(r))
		}
	}
	for k := range doc {
		if !served[k] {
			t.Errorf("in openapi.yaml but not served: %s", k)
		}
	}
	if len(served) < 6 {
		t.Errorf("only %d routes served", len(served))
	}
}

func grep(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// worldTempDir is a temporary directory the postgres OS user can enter,
// since the private cluster runs as that user when the tests run as root.
func worldTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "devstack-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
