// Command loadtest measures the REST path of the full stack next to a
// baseline measured in the same run, and prints throughput, latency
// percentiles and their ratio:
//
//	go run ./deploy/cmd/loadtest [-workers 32] [-duration 5s] [-rounds 2]
//
// Scenario "tokens": GET /api/v1/p/tokens through the in-process gateway,
// frame and cache of the dev stack (embedded Kafka and Postgres, in a
// temporary directory), against a bare gin handler that answers the same
// bytes.
//
// Scenario "auth": a wallet logs in; authenticated GET /api/v1/user/info
// is measured next to public GET /api/v1/p/tokens in the same run, and
// wallet logins (challenge, EIP-712 signature, verify) in verify
// operations per second.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/gin-gonic/gin"

	"blockspace.exchange/deploy/loadtest"
	"blockspace.exchange/platform/serve"
)

func main() {
	workers := flag.Int("workers", 32, "concurrent keep-alive connections")
	duration := flag.Duration("duration", 5*time.Second, "length of each measured run")
	rounds := flag.Int("rounds", 3, "alternating rounds of baseline and subject; the median ratio and the best runs are reported")
	flag.Parse()
	if err := run(*workers, *duration, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1)
	}
}

func run(workers int, d time.Duration, rounds int) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stackURL, stop, err := startStack(ctx)
	if err != nil {
		return err
	}
	defer stop()
	client := loadtest.Client(workers)
	body, err := fetch(client, stackURL+"/api/v1/p/tokens")
	if err != nil {
		return err
	}
	bareURL, err := startBare(ctx, body)
	if err != nil {
		return err
	}
	fmt.Printf("GET /api/v1/p/tokens, %d workers, %s per run, %d rounds\n", workers, d, rounds)
	c := loadtest.Compare(ctx, os.Stdout, client, workers, d, rounds,
		loadtest.Target{Name: "bare gin handler", NewReq: loadtest.GET(bareURL+"/api/v1/p/tokens", "")},
		loadtest.Target{Name: "full stack", NewReq: loadtest.GET(stackURL+"/api/v1/p/tokens", "")})
	fmt.Printf("full stack / bare handler: median of rounds %.0f%%, best runs %.0f%% (goal >= 60%%)\n",
		100*c.MedianRatio, 100*c.Subject.RPS()/c.Baseline.RPS())
	return runAuth(ctx, client, stackURL, workers, d, rounds)
}

func startStack(ctx context.Context) (string, func(), error) {
	// Logins are measured from one client address.
	stack, stop, err := loadtest.StartStack(ctx, map[string]string{
		"AUTH_LOGIN_RATE_PER_IP": "1000000000", "AUTH_LOGIN_BURST_PER_IP": "1000000000",
		"AUTH_LOGIN_RATE_PER_ADDRESS": "1000000000", "AUTH_LOGIN_BURST_PER_ADDRESS": "1000000000",
	}, os.Stderr)
	if err != nil {
		return "", nil, err
	}
	return stack.Addresses().REST, stop, nil
}

func startBare(ctx context.Context, tokensBody []byte) (string, error) {
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.GET("/api/v1/p/tokens", func(c *gin.Context) { c.Data(http.StatusOK, "application/json; charset=utf-8", tokensBody) })
	ln, err := serve.Listen("127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go func() { _ = serve.HTTP(ctx, ln, e, time.Second) }()
	return "http://" + ln.Addr().String(), nil
}

func fetch(c *http.Client, url string) ([]byte, error) {
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return io.ReadAll(resp.Body)
}
