package main

import (
	"context"
	"crypto/ecdsa"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"blockspace.exchange/deploy/loadtest"
)

// runAuth is scenario "auth": a wallet logs in, then authenticated
// GET /api/v1/user/info is measured next to public GET /api/v1/p/tokens
// in the same run, and verify (a whole wallet login: challenge, EIP-712
// signature, verify) is measured in operations per second.
func runAuth(ctx context.Context, client *http.Client, base string, workers int, d time.Duration, rounds int) error {
	key, err := crypto.GenerateKey()
	if err != nil {
		return err
	}
	token, err := walletLogin(client, base, key)
	if err != nil {
		return err
	}
	fmt.Printf("\nauthenticated GET /api/v1/user/info next to public GET /api/v1/p/tokens, %d workers, %s per run, %d rounds\n", workers, d, rounds)
	c := loadtest.Compare(ctx, os.Stdout, client, workers, d, rounds,
		loadtest.Target{Name: "public /api/v1/p/tokens", NewReq: loadtest.GET(base+"/api/v1/p/tokens", "")},
		loadtest.Target{Name: "bearer /api/v1/user/info", NewReq: loadtest.GET(base+"/api/v1/user/info", token)})
	fmt.Printf("authenticated user/info / public tokens: median of rounds %.0f%%, best runs %.0f%% (goal >= 70%%)\n",
		100*c.MedianRatio, 100*c.Subject.RPS()/c.Baseline.RPS())

	// Each login is two database transactions: more clients than the
	// pool has connections only measure load shedding (429).
	loginWorkers := min(workers, 4)
	ops, failed := measureLogins(ctx, client, base, loginWorkers, d)
	fmt.Printf("\nwallet login (challenge + EIP-712 signature + verify), %d workers, %s: %.0f verify operations/s, %d failed\n",
		loginWorkers, d, ops, failed)
	return nil
}

// measureLogins runs whole logins of fresh wallets for d and returns
// successful verifies per second.
func measureLogins(ctx context.Context, client *http.Client, base string, workers int, d time.Duration) (float64, int64) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var ok, failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Go(func() {
			key, _ := crypto.GenerateKey()
			for ctx.Err() == nil {
				if _, err := walletLogin(client, base, key); err != nil {
					if ctx.Err() == nil {
						failed.Add(1)
					}
					continue
				}
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	return float64(ok.Load()) / time.Since(start).Seconds(), failed.Load()
}

// walletLogin logs in as a wallet library does and returns the access token.
func walletLogin(client *http.Client, base string, key *ecdsa.PrivateKey) (string, error) {
	s, err := loadtest.Login(client, base, key)
	return s.AccessToken.Token, err
}
