package main

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi/bind"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"blockspace.exchange/deploy/devchain"
	"blockspace.exchange/deploy/loadtest"
	"blockspace.exchange/platform/chain/collateral"
	"blockspace.exchange/topics"
)

// fundETH is what each trader deposits and moves to its trading account:
// far more than its open buys ever reserve at once.
const fundETH = 1

// bench is the running stack as the command sees it.
type bench struct {
	tg     target
	base   string // the REST base
	client *http.Client
	pool   *pgxpool.Pool // the stack's database, read only
}

// trader is a logged-in wallet and its accounts.
type trader struct {
	key              *ecdsa.PrivateKey
	bearer           string // the Authorization header
	current, preconf int64
}

// pair is two traders and their market; a holds the lot after stocking.
type pair struct {
	m    market
	a, b *trader
}

// login logs in the wallet of key.
func (b *bench) login(key *ecdsa.PrivateKey) (*trader, error) {
	s, err := loadtest.Login(b.client, b.base, key)
	if err != nil {
		return nil, err
	}
	t := &trader{key: key, bearer: "Bearer " + s.AccessToken.Token, current: s.Account(1), preconf: s.Account(2)}
	if t.current == 0 || t.preconf == 0 {
		return nil, fmt.Errorf("user %d has accounts %+v", s.User.UserID, s.User.Accounts)
	}
	return t, nil
}

// newTraders logs in n fresh wallets.
func (b *bench) newTraders(ctx context.Context, n int) ([]*trader, error) {
	out := make([]*trader, n)
	g, _ := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i := range out {
		g.Go(func() error {
			key, err := crypto.GenerateKey()
			if err != nil {
				return err
			}
			out[i], err = b.login(key)
			return err
		})
	}
	return out, g.Wait()
}

// fund deposits fundETH for every trader on the dev chain (dev key 1
// pays), mines blocks and waits until the deposit watcher has credited them all, and moves
// the funds to the trading accounts with the transfer route: every
// balance comes from the ledger, as a user's would.
func (b *bench) fund(ctx context.Context, traders []*trader) error {
	chain := b.tg.chain
	c, err := collateral.NewCollateral(devchain.CollateralAddress(), chain.Client())
	if err != nil {
		return err
	}
	auth, err := bind.NewKeyedTransactorWithChainID(chain.Key(1), chain.ChainID())
	if err != nil {
		return err
	}
	nonce, err := chain.Client().PendingNonceAt(ctx, chain.Address(1))
	if err != nil {
		return err
	}
	auth.Context, auth.Value = ctx, new(big.Int).Mul(big.NewInt(fundETH), big.NewInt(1e18))
	for i, t := range traders {
		auth.Nonce = new(big.Int).SetUint64(nonce + uint64(i))
		if _, err := c.DepositFor(auth, crypto.PubkeyToAddress(t.key.PublicKey)); err != nil {
			return fmt.Errorf("deposit for trader %d: %w", i, err)
		}
	}
	current, preconf := make([]int64, len(traders)), make([]int64, len(traders))
	for i, t := range traders {
		current[i], preconf[i] = t.current, t.preconf
	}
	// The stack makes no blocks of its own (DEV_BLOCK_INTERVAL=0): a block
	// every poll takes the deposits in and then confirms them.
	if err := b.waitFunded(ctx, "deposits credited", current, func() { chain.Mine() }); err != nil {
		return err
	}
	g, _ := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for _, t := range traders {
		g.Go(func() error {
			return loadtest.PostForm(b.client, b.base+"/api/v1/user/account/transfer/token", strings.TrimPrefix(t.bearer, "Bearer "),
				url.Values{"fromAccountId": {fmt.Sprint(t.current)}, "toAccountId": {fmt.Sprint(t.preconf)},
					"tokenId": {"1"}, "quantity": {fmt.Sprint(fundETH)}}, nil)
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return b.waitFunded(ctx, "transfers applied", preconf, func() {})
}

// waitFunded waits until every account holds fundETH of ETH, calling
// each before every look.
func (b *bench) waitFunded(ctx context.Context, what string, accounts []int64, each func()) error {
	return waitFor(ctx, what, 60*time.Second, func() (bool, error) {
		each()
		var n int
		err := b.pool.QueryRow(ctx, `SELECT count(*) FROM account_balances WHERE account_id = ANY($1) AND token_id = 1 AND quantity >= $2`,
			accounts, fundETH).Scan(&n)
		return n == len(accounts), err
	})
}

// markets lists the open markets of both families and picks n that stay
// open until after until.
func (b *bench) markets(ctx context.Context, until time.Time, n int) ([]market, error) {
	var pc, wb struct {
		Markets []listedMarket `json:"markets"`
	}
	if err := getData(ctx, b.client, b.base+"/api/v1/p/inclusion-preconf/markets", &pc); err != nil {
		return nil, err
	}
	if err := getData(ctx, b.client, b.base+"/api/v1/p/wholeblock/markets", &wb); err != nil {
		return nil, err
	}
	return pickMarkets(pc.Markets, wb.Markets, until, n)
}

// stock gives trader a of every pair one lot of its market, bought from
// the demo seller: the seller offers the lot, a buys it. Inclusion-preconf
// lots are bought first, because a whole-block trade moves the seller's
// unoffered preconf gas of the slot to the block's buyer. It returns the
// answer that accepted the first pair's buy.
func (b *bench) stock(ctx context.Context, seller *trader, pairs []pair) ([]byte, error) {
	answers := make([][]byte, len(pairs))
	for _, fam := range []topics.Family{topics.InclusionPreconf, topics.WholeBlock} {
		var buyers []int64
		var instruments []string
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(8)
		for i, p := range pairs {
			if p.m.family != fam {
				continue
			}
			buyers, instruments = append(buyers, p.a.preconf), append(instruments, p.m.instrument)
			g.Go(func() error {
				if _, err := b.placeRetrying(gctx, seller, p.m, orderBody(seller.preconf, p.m, false)); err != nil {
					return fmt.Errorf("demo seller offers %s: %w", p.m.instrument, err)
				}
				var err error
				if answers[i], err = b.placeRetrying(gctx, p.a, p.m, orderBody(p.a.preconf, p.m, true)); err != nil {
					return fmt.Errorf("buy %s from the demo seller: %w", p.m.instrument, err)
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return nil, err
		}
		err := waitFor(ctx, fmt.Sprintf("%d %s lots settled", len(buyers), fam), 60*time.Second, func() (bool, error) {
			var n int
			err := b.pool.QueryRow(ctx, `SELECT count(*) FROM trades WHERE buyer_account_id = ANY($1) AND instrument_id = ANY($2)`,
				buyers, instruments).Scan(&n)
			return n == len(buyers), err
		})
		if err != nil {
			return nil, err
		}
	}
	return answers[0], nil
}

// placeRetrying places an order and retries while ingress has not read
// the market yet (503 at start, 114 before its market.open is read). It
// returns the accepting answer.
func (b *bench) placeRetrying(ctx context.Context, t *trader, m market, body []byte) ([]byte, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, answer, err := placeOrderRaw(b.client, b.base+orderPath(m.family), t.bearer, body)
		var r *refusal
		if err == nil || !errors.As(err, &r) || !(r.status == http.StatusServiceUnavailable || r.code == topics.CodeMarketNotOpen) || time.Now().After(deadline) {
			return answer, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitFor polls cond every 50 ms until it holds, fails or timeout passes.
func waitFor(ctx context.Context, what string, timeout time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil {
			return fmt.Errorf("wait for %s: %w", what, err)
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not within %s", what, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// getData reads a REST resource's envelope and decodes its data.
func getData(ctx context.Context, client *http.Client, u string, data any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var env struct {
		Success bool            `json:"success"`
		Data    json.RawMessage `json:"data"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &env) != nil || !env.Success {
		return fmt.Errorf("GET %s: %s %s", u, resp.Status, body)
	}
	return json.Unmarshal(env.Data, data)
}

// demoSeller logs in the demo validator's user, who is issued every slot.
func (b *bench) demoSeller() (*trader, error) {
	key, err := crypto.HexToECDSA(strings.TrimPrefix(devchain.DemoUserKey, "0x"))
	if err != nil {
		return nil, err
	}
	return b.login(key)
}
