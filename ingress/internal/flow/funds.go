package flow

import (
	"context"
	"log/slog"
	"math/big"
	"strconv"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"

	of "blockspace.exchange/platform/orderflow"
)

// ChainAccounts reads accounts from the chain: ethclient.Client, or the
// simulated backend's client in tests.
type ChainAccounts interface {
	BalanceAt(ctx context.Context, account common.Address, block *big.Int) (*big.Int, error)
	NonceAt(ctx context.Context, account common.Address, block *big.Int) (uint64, error)
}

// FundsConfig configures the check that senders can pay.
type FundsConfig struct {
	// TTL is how long a sender's balance and nonce read from the chain
	// are used before they are read again (default 2s).
	TTL time.Duration
	// MaxNonceGap is how far ahead of its account's nonce a transaction's
	// nonce may be (default 64): one further waits on transactions that
	// do not exist, and may never be included.
	MaxNonceGap uint64
	// ReadTimeout bounds one read of the chain (default 1s); a sender
	// whose account cannot be read is admitted on the rate limits alone.
	ReadTimeout time.Duration
}

// Defaults of FundsConfig.
const (
	DefaultFundsTTL    = 2 * time.Second
	DefaultMaxNonceGap = 64
	maxCachedAccounts  = 100_000
)

// Funds refuses transactions whose sender cannot pay for them, as the
// chain says: a balance below what the submission's transactions of that
// sender may cost (gas × fee cap + value, and blob gas × blob fee cap),
// or a nonce the account already used or one too far ahead of it.
type Funds struct {
	cfg   FundsConfig
	chain ChainAccounts
	log   *slog.Logger
	now   func() time.Time

	mu       sync.Mutex // guards accounts
	accounts map[common.Address]account
}

type account struct {
	balance *big.Int
	nonce   uint64
	at      time.Time
}

// NewFunds returns the check reading chain.
func NewFunds(cfg FundsConfig, chain ChainAccounts, log *slog.Logger) *Funds {
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultFundsTTL
	}
	if cfg.MaxNonceGap == 0 {
		cfg.MaxNonceGap = DefaultMaxNonceGap
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = time.Second
	}
	return &Funds{cfg: cfg, chain: chain, log: log, now: time.Now, accounts: make(map[common.Address]account)}
}

// Check returns a TxError for the first transaction of txs whose sender
// cannot pay for it.
func (f *Funds) Check(ctx context.Context, txs []of.Tx) error {
	need := make(map[common.Address]*big.Int)
	for _, tx := range txs {
		if need[tx.From] == nil {
			need[tx.From] = new(big.Int)
		}
		need[tx.From].Add(need[tx.From], tx.Tx.Cost())
	}
	for _, tx := range txs {
		a, ok := f.account(ctx, tx.From)
		if !ok {
			continue
		}
		from := of.LowerAddress(tx.From)
		if a.balance.Cmp(need[tx.From]) < 0 {
			return &of.TxError{Reason: "sender " + from + " has " + a.balance.String() +
				" wei, less than the " + need[tx.From].String() + " wei (gas × fee cap + value) its transactions may cost"}
		}
		if n := tx.Tx.Nonce(); n < a.nonce {
			return &of.TxError{Reason: "nonce " + u64(n) + " of sender " + from + " is already used: the account's nonce is " + u64(a.nonce)}
		} else if n-a.nonce > f.cfg.MaxNonceGap {
			return &of.TxError{Reason: "nonce " + u64(n) + " of sender " + from + " is more than " + u64(f.cfg.MaxNonceGap) +
				" ahead of the account's nonce " + u64(a.nonce)}
		}
	}
	return nil
}

// account returns the sender's balance and nonce, from the cache while
// they are younger than TTL. ok is false when the chain did not answer.
func (f *Funds) account(ctx context.Context, addr common.Address) (account, bool) {
	now := f.now()
	f.mu.Lock()
	a, ok := f.accounts[addr]
	f.mu.Unlock()
	if ok && now.Sub(a.at) < f.cfg.TTL {
		return a, true
	}
	ctx, cancel := context.WithTimeout(ctx, f.cfg.ReadTimeout)
	defer cancel()
	balance, err := f.chain.BalanceAt(ctx, addr, nil)
	if err != nil {
		f.log.Warn("read sender balance; admitted on the rate limits", "sender", addr, "error", err)
		return account{}, false
	}
	nonce, err := f.chain.NonceAt(ctx, addr, nil)
	if err != nil {
		f.log.Warn("read sender nonce; admitted on the rate limits", "sender", addr, "error", err)
		return account{}, false
	}
	a = account{balance: balance, nonce: nonce, at: now}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.accounts) >= maxCachedAccounts {
		f.sweep(now)
	}
	f.accounts[addr] = a
	return a, true
}

// sweep drops expired accounts; a flood of distinct senders that leaves
// the cache full is forgotten rather than grown. Called with mu held.
func (f *Funds) sweep(now time.Time) {
	for k, a := range f.accounts {
		if now.Sub(a.at) >= f.cfg.TTL {
			delete(f.accounts, k)
		}
	}
	if len(f.accounts) >= maxCachedAccounts {
		clear(f.accounts)
	}
}

func u64(n uint64) string { return strconv.FormatUint(n, 10) }
