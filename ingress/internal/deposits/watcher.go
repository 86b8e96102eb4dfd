// Package deposits follows the collateral contract's Deposit events and
// publishes each one to funding-events once it is Confirmations blocks
// deep, so that a reorganisation shallower than that never credits an
// orphaned log. Where it stands (last block and its hash) is kept in
// Postgres, so a restart resumes after the last processed block; a
// processed block that is no longer canonical (a reorg deeper than the
// confirmation depth) stops the watcher with ErrDeepReorg for an operator.
package deposits

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"
	"github.com/twmb/franz-go/pkg/kgo"

	pchain "blockspace.exchange/platform/chain"
	"blockspace.exchange/platform/chain/collateral"
	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/topics"
)

// ErrDeepReorg means a block the watcher already processed left the
// canonical chain: the confirmation depth was too small.
var ErrDeepReorg = errors.New("a processed block is no longer canonical")

// Chain is what the watcher reads: ethclient.Client or the simulated
// backend's client.
type Chain interface {
	ethereum.LogFilterer
	HeaderByNumber(ctx context.Context, number *big.Int) (*types.Header, error)
}

// Config configures the watcher.
type Config struct {
	ChainID  int64
	Contract common.Address
	// Confirmations is how many blocks must follow a deposit's block
	// before it is credited (CHAIN_CONFIRMATIONS, pchain.DefaultConfirmations
	// on public chains).
	Confirmations uint64
	// StartBlock is the first block to scan when no cursor is stored
	// (CHAIN_START_BLOCK: the contract's deployment block).
	StartBlock uint64
	// MaxRange bounds the blocks of one eth_getLogs call (1000).
	MaxRange uint64
	// Poll is the interval between head checks (CHAIN_POLL,
	// pchain.DefaultPoll).
	Poll time.Duration
	// Instance names one incarnation of a chain that starts again from
	// its genesis (the dev stack's simulated chain, new at every start).
	// It goes into deposit ids, so a deposit that repeats a transaction
	// of an earlier incarnation (same key, nonce and amount, so the same
	// hash) is credited again rather than dropped as a duplicate. Empty
	// on real chains.
	Instance string
	// Metrics records the head, the cursor and the polls (watcher
	// "deposits"); nil records nothing.
	Metrics *pchain.WatcherMetrics
}

// Watcher is a running chain watcher.
type Watcher struct {
	cfg   Config
	chain Chain
	pool  *pgxpool.Pool
	cl    *kgo.Client
	log   *slog.Logger
	abi   *collateral.CollateralFilterer
	event common.Hash
}

// New returns a watcher publishing with cl.
func New(cfg Config, chain Chain, pool *pgxpool.Pool, cl *kgo.Client, log *slog.Logger) (*Watcher, error) {
	if cfg.MaxRange == 0 {
		cfg.MaxRange = 1000
	}
	if cfg.Poll <= 0 {
		cfg.Poll = pchain.DefaultPoll
	}
	parsed, err := collateral.CollateralMetaData.GetAbi()
	if err != nil {
		return nil, fmt.Errorf("chain watcher: %w", err)
	}
	filterer, err := collateral.NewCollateralFilterer(cfg.Contract, nil)
	if err != nil {
		return nil, fmt.Errorf("chain watcher: %w", err)
	}
	return &Watcher{cfg: cfg, chain: chain, pool: pool, cl: cl, log: log,
		abi: filterer, event: parsed.Events["Deposit"].ID}, nil
}

// Run steps until ctx ends. Errors other than ErrDeepReorg are retried at
// the next poll.
func (w *Watcher) Run(ctx context.Context) error {
	t := time.NewTicker(w.cfg.Poll)
	defer t.Stop()
	for {
		for {
			more, err := w.Step(ctx)
			if errors.Is(err, ErrDeepReorg) {
				w.log.Error("chain watcher stopped", "error", err)
				return err
			}
			if err != nil {
				if ctx.Err() == nil {
					w.log.Warn("chain watcher step", "error", err)
				}
				break
			}
			if !more {
				break
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

type cursor struct {
	block uint64
	hash  string
}

func (w *Watcher) contract() string { return strings.ToLower(w.cfg.Contract.Hex()) }

func (w *Watcher) loadCursor(ctx context.Context) (cursor, bool, error) {
	var c cursor
	var block int64
	err := w.pool.QueryRow(ctx, `SELECT last_block, last_hash FROM chain_cursors WHERE chain_id = $1 AND contract = $2`,
		w.cfg.ChainID, w.contract()).Scan(&block, &c.hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return cursor{}, false, nil
	}
	if err != nil {
		return cursor{}, false, fmt.Errorf("read chain cursor: %w", err)
	}
	c.block = uint64(block)
	return c, true, nil
}

func (w *Watcher) header(ctx context.Context, n uint64) (*types.Header, error) {
	h, err := w.chain.HeaderByNumber(ctx, new(big.Int).SetUint64(n))
	if err != nil {
		return nil, fmt.Errorf("header %d: %w", n, err)
	}
	return h, nil
}

// Step processes the next range of confirmed blocks, if any. more is true
// when confirmed blocks remain beyond the range.
func (w *Watcher) Step(ctx context.Context) (more bool, err error) {
	more, err = w.step(ctx)
	w.cfg.Metrics.Poll(err)
	return more, err
}

func (w *Watcher) step(ctx context.Context) (more bool, err error) {
	cur, ok, err := w.loadCursor(ctx)
	if err != nil {
		return false, err
	}
	from := w.cfg.StartBlock
	if ok {
		w.cfg.Metrics.Processed(cur.block)
		from = cur.block + 1
		h, err := w.header(ctx, cur.block)
		if err != nil {
			return false, err
		}
		if h.Hash().Hex() != cur.hash {
			return false, fmt.Errorf("%w: block %d was %s, now %s", ErrDeepReorg, cur.block, cur.hash, h.Hash().Hex())
		}
	}
	head, err := w.chain.HeaderByNumber(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("head: %w", err)
	}
	w.cfg.Metrics.Head(head.Number.Uint64())
	if head.Number.Uint64() < w.cfg.Confirmations {
		return false, nil
	}
	safe := head.Number.Uint64() - w.cfg.Confirmations
	if safe < from {
		return false, nil
	}
	to := min(safe, from+w.cfg.MaxRange-1)
	last, err := w.header(ctx, to)
	if err != nil {
		return false, err
	}
	recs, err := w.deposits(ctx, from, to)
	if err != nil {
		return false, err
	}
	if len(recs) > 0 {
		if err := w.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return false, fmt.Errorf("publish deposits: %w", err)
		}
	}
	if _, err := w.pool.Exec(ctx, `
		INSERT INTO chain_cursors (chain_id, contract, last_block, last_hash) VALUES ($1, $2, $3, $4)
		ON CONFLICT (chain_id, contract) DO UPDATE SET last_block = EXCLUDED.last_block, last_hash = EXCLUDED.last_hash`,
		w.cfg.ChainID, w.contract(), int64(to), last.Hash().Hex()); err != nil {
		return false, fmt.Errorf("store chain cursor: %w", err)
	}
	w.cfg.Metrics.Processed(to)
	if len(recs) > 0 {
		w.log.Info("deposits published", "count", len(recs), "from", from, "to", to)
	}
	return to < safe, nil
}

// deposits reads the Deposit logs of [from, to] as records.
func (w *Watcher) deposits(ctx context.Context, from, to uint64) ([]*kgo.Record, error) {
	logs, err := w.chain.FilterLogs(ctx, ethereum.FilterQuery{
		FromBlock: new(big.Int).SetUint64(from), ToBlock: new(big.Int).SetUint64(to),
		Addresses: []common.Address{w.cfg.Contract}, Topics: [][]common.Hash{{w.event}},
	})
	if err != nil {
		return nil, fmt.Errorf("filter deposit logs %d-%d: %w", from, to, err)
	}
	var recs []*kgo.Record
	for _, l := range logs {
		if l.Removed {
			continue
		}
		ev, err := w.abi.ParseDeposit(l)
		if err != nil {
			w.log.Warn("undecodable deposit log", "tx", l.TxHash, "index", l.Index, "error", err)
			continue
		}
		r, err := w.record(l, ev)
		if err != nil {
			return nil, err
		}
		recs = append(recs, r)
	}
	return recs, nil
}

func (w *Watcher) record(l types.Log, ev *collateral.CollateralDeposit) (*kgo.Record, error) {
	depositor := strings.ToLower(ev.Depositor.Hex())
	p := topics.DepositObserved{
		ChainID: w.cfg.ChainID, Contract: w.contract(),
		BlockNumber: l.BlockNumber, BlockHash: l.BlockHash.Hex(), TransactionIndex: l.TxIndex,
		TransactionHash: l.TxHash.Hex(), LogIndex: l.Index,
		Sender: strings.ToLower(ev.Sender.Hex()), Depositor: depositor, TokenID: 1,
		Quantity: decimal.NewFromBigInt(ev.Amount, -18).String(), AmountWei: ev.Amount.String(),
	}
	chain := strconv.FormatInt(w.cfg.ChainID, 10)
	if w.cfg.Instance != "" {
		chain += "-" + w.cfg.Instance
	}
	id := fmt.Sprintf("deposit-%s-%s-%d", chain, strings.ToLower(l.TxHash.Hex()), l.Index)
	e, err := topics.FundingEnvelope(topics.TypeDepositObserved, id, time.Now(), p)
	if err != nil {
		return nil, err
	}
	return kafka.NewRecord(topics.FundingEvents, []byte(depositor), e)
}
