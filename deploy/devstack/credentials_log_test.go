package devstack

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"testing"

	"blockspace.exchange/platform/config"
	"blockspace.exchange/platform/kafka/kafkatest"
)

// lockedBuffer collects the log lines every service of the stack writes
// from many goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestLogsCarryNoCredentials runs the credential-bearing flows of the dev
// stack with every service logging at debug level (every request logged):
// login, a refresh with the credential in the query string, private reads
// with the access token, an orderflow API key on the originator, searcher
// and refund paths, and logout. No log line may contain the API key, the
// refresh credential or the access token used.
func TestLogsCarryNoCredentials(t *testing.T) {
	t.Parallel()
	logs := &lockedBuffer{}
	vars := map[string]string{
		"DATA_DIR": worldTempDir(t), "HTTP_ADDR": "127.0.0.1:0", "ADMIN_ADDR": "127.0.0.1:0", "KAFKA_ADDR": "127.0.0.1:0",
		"ORIGINATOR_ADDR": "127.0.0.1:0", "SEARCHER_ADDR": "127.0.0.1:0", "ORDERFLOW_ADDR": "127.0.0.1:0",
		"DEV_BLOCK_INTERVAL": "500ms", "CHAIN_ADDR": "127.0.0.1:0", "KAFKA_BROKERS": strings.Join(kafkatest.Shared(t), ","),
		"DATABASE_URL": sharedDatabase(t),
	}
	cfg, err := ConfigFromEnv(config.FromMap(vars))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s, err := Start(ctx, cfg, slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	stop := sync.OnceFunc(func() { cancel(); <-done })
	defer stop()

	c := client{t: t, base: s.Addresses().REST}
	sess, verify := newWallet(t).login(t, c)
	access := sess.AccessToken.Token
	refresh := verify.cookie("x_auth_refresh_token")
	if access == "" || refresh == nil || refresh.Value == "" {
		t.Fatalf("login gave no credentials: %s", verify.raw)
	}
	ref := c.do("POST", "/api/v1/user/login/refresh?refreshToken="+url.QueryEscape(refresh.Value), nil, nil)
	if ref.status != 200 {
		t.Fatalf("refresh with the credential in the query string: %d %s", ref.status, ref.raw)
	}
	if a := c.do("GET", fmt.Sprintf("/api/v1/user/account/%d", sess.User.Accounts[0].AccountID), nil, bearer(access)); a.status != 200 {
		t.Fatalf("private read: %d %s", a.status, a.raw)
	}

	of := s.Addresses().Orderflow
	key := apiKey(t, of.Orderflow, 1)
	postJSON(t, of.Originator+"/v1/"+key, rpc("eth_sendRawTransaction", "0x00"), nil)
	postJSON(t, of.Searcher+"/v1/"+key, rpc("eth_sendBundle", map[string]any{}), nil)
	getJSON(t, of.Orderflow+"/v1/"+key+"/refunds")
	getJSON(t, of.Orderflow+"/v1/"+key+"/tx/0x"+strings.Repeat("ab", 32))
	postJSON(t, of.Orderflow+"/v1/auth/account", nil, map[string]string{"Authorization": "Bearer " + key})

	if out := c.do("POST", "/api/v1/user/logout", nil, bearer(access)); out.status != 200 {
		t.Fatalf("logout: %d %s", out.status, out.raw)
	}
	c.do("GET", fmt.Sprintf("/api/v1/user/account/%d", sess.User.Accounts[0].AccountID), nil, bearer(access))

	stop() // every line is written once the stack has stopped
	text := logs.String()
	if !strings.Contains(text, "/api/v1/user/login/refresh") {
		t.Fatalf("the requests were not logged at debug level; logs:\n%.2000s", text)
	}
	for name, secret := range map[string]string{"API key": key, "API key's hex": strings.TrimPrefix(key, "ofk_"), "refresh credential": refresh.Value, "access token": access} {
		for _, line := range strings.Split(text, "\n") {
			if strings.Contains(line, secret) {
				t.Errorf("a log line holds the %s: %.600s", name, line)
			}
		}
	}
}
