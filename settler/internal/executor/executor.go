// Package executor pays debited withdrawal requests on chain through the
// collateral contract's operator withdraw and reports each outcome on
// funding-events, where the settler applies it.
//
// A request is paid at most once: the signed payout transaction is stored
// (withdraw_requests.raw_tx) before it is sent, so a restarted executor
// rebroadcasts that same transaction; and the contract refuses a request
// id it has paid (AlreadyPaid), so even a second, different transaction
// for the same request cannot pay again. Before building a transaction,
// and when one reverted, the executor asks the contract whether the id is
// paid and, if so, reports the payment it finds in the Withdrawal logs.
package executor

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/accounts/abi/bind"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"
	"github.com/twmb/franz-go/pkg/kgo"

	pchain "blockspace.exchange/platform/chain"
	"blockspace.exchange/platform/chain/collateral"
	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/topics"
)

// Chain is what the executor uses of an Ethereum node: ethclient.Client
// or the simulated backend's client.
type Chain interface {
	bind.ContractBackend
	ethereum.TransactionReader
	BlockNumber(ctx context.Context) (uint64, error)
}

// Config configures the executor.
type Config struct {
	ChainID  int64          // requests of this chain are paid here
	Contract common.Address // COLLATERAL_CONTRACT
	// OperatorKey signs the payouts (WITHDRAW_OPERATOR_KEY); it must be the
	// contract's operator.
	OperatorKey *ecdsa.PrivateKey
	// Confirmations is how many blocks must follow the payout's block
	// before it is final (CHAIN_CONFIRMATIONS).
	Confirmations uint64
	// Poll is the interval between rounds (CHAIN_POLL, chain.DefaultPoll).
	Poll time.Duration
	// GasLimit of a payout whose gas cannot be estimated because it would
	// revert (1000000): it is sent all the same, reverts on chain, and is
	// reported as failed. Other payouts get their estimate plus a quarter.
	GasLimit uint64
	// Metrics records the rounds, the open requests and the outcomes;
	// nil records nothing.
	Metrics *Metrics
}

// Executor is a running withdrawal executor.
type Executor struct {
	cfg      Config
	chain    Chain
	pool     *pgxpool.Pool
	cl       *kgo.Client
	log      *slog.Logger
	contract *collateral.Collateral
	abi      *abi.ABI
	operator common.Address
	signer   types.Signer
}

// New returns an executor publishing with cl.
func New(cfg Config, chain Chain, pool *pgxpool.Pool, cl *kgo.Client, log *slog.Logger) (*Executor, error) {
	if cfg.OperatorKey == nil {
		return nil, errors.New("withdrawal executor: no operator key")
	}
	if cfg.Poll <= 0 {
		cfg.Poll = pchain.DefaultPoll
	}
	if cfg.GasLimit == 0 {
		cfg.GasLimit = 1_000_000
	}
	c, err := collateral.NewCollateral(cfg.Contract, chain)
	if err != nil {
		return nil, fmt.Errorf("withdrawal executor: %w", err)
	}
	parsed, err := collateral.CollateralMetaData.GetAbi()
	if err != nil {
		return nil, fmt.Errorf("withdrawal executor: %w", err)
	}
	return &Executor{cfg: cfg, chain: chain, pool: pool, cl: cl, log: log, contract: c, abi: parsed,
		operator: crypto.PubkeyToAddress(cfg.OperatorKey.PublicKey),
		signer:   types.LatestSignerForChainID(big.NewInt(cfg.ChainID))}, nil
}

// Run steps until ctx ends; a failed round is retried at the next poll.
func (e *Executor) Run(ctx context.Context) error {
	t := time.NewTicker(e.cfg.Poll)
	defer t.Stop()
	for {
		if err := e.Step(ctx); err != nil && ctx.Err() == nil {
			e.log.Warn("withdrawal executor round", "error", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// request is an open withdrawal request of this chain.
type request struct {
	id, user int64
	status   int
	to       string
	amount   *big.Int // in the token's smallest unit
	native   bool
	raw      []byte
	created  time.Time
}

// Step handles every open request once: it pays those not yet paid and
// reports those whose payout is final.
func (e *Executor) Step(ctx context.Context) error {
	err := e.step(ctx)
	e.cfg.Metrics.chainMetrics().Poll(err)
	return err
}

func (e *Executor) step(ctx context.Context) error {
	reqs, err := e.open(ctx)
	if err != nil {
		return err
	}
	e.cfg.Metrics.found(reqs, time.Now())
	head, err := e.chain.BlockNumber(ctx)
	if err != nil {
		return fmt.Errorf("read chain head: %w", err)
	}
	e.cfg.Metrics.chainMetrics().Head(head)
	if head >= e.cfg.Confirmations {
		// Payouts mined up to here are final.
		e.cfg.Metrics.chainMetrics().Processed(head - e.cfg.Confirmations)
	}
	var errs []error
	for _, r := range reqs {
		if err := e.handle(ctx, r, head); err != nil {
			errs = append(errs, fmt.Errorf("withdraw request %d: %w", r.id, err))
		}
	}
	return errors.Join(errs...)
}

func (e *Executor) open(ctx context.Context) ([]request, error) {
	rows, _ := e.pool.Query(ctx, `
		SELECT w.request_id, w.user_id, w.status, w.to_address, w.quantity, t.decimals, t.native_token, w.raw_tx, w.create_date
		FROM withdraw_requests w JOIN tokens t USING (token_id)
		WHERE w.status IN (1, 2) AND w.chain_id = $1 ORDER BY w.request_id`, e.cfg.ChainID)
	reqs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (request, error) {
		var r request
		var q decimal.Decimal
		var decimals int32
		err := row.Scan(&r.id, &r.user, &r.status, &r.to, &q, &decimals, &r.native, &r.raw, &r.created)
		r.amount = q.Shift(decimals).BigInt()
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("read open withdraw requests: %w", err)
	}
	return reqs, nil
}

func (e *Executor) handle(ctx context.Context, r request, head uint64) error {
	if !r.native {
		return e.publishFailed(ctx, r, "", "the collateral contract pays the native token only")
	}
	if r.raw == nil {
		return e.pay(ctx, r, head)
	}
	tx := new(types.Transaction)
	if err := tx.UnmarshalBinary(r.raw); err != nil {
		return fmt.Errorf("decode stored payout: %w", err)
	}
	receipt, err := e.chain.TransactionReceipt(ctx, tx.Hash())
	if errors.Is(err, ethereum.NotFound) {
		return e.resend(ctx, r, tx)
	}
	if err != nil {
		return fmt.Errorf("read receipt %s: %w", tx.Hash().Hex(), err)
	}
	if r.status == 1 {
		if err := e.publishSubmitted(ctx, r, tx.Hash()); err != nil {
			return err
		}
	}
	block := receipt.BlockNumber.Uint64()
	if head < block+e.cfg.Confirmations {
		return nil
	}
	if receipt.Status == types.ReceiptStatusSuccessful {
		return e.publishConfirmed(ctx, r, tx.Hash(), block)
	}
	// Reverted: if the id is paid all the same (by another transaction),
	// that payment is the outcome; otherwise the funds go back.
	if hash, blk, ok, err := e.paidBy(ctx, r.id); err != nil {
		return err
	} else if ok {
		return e.recordPayment(ctx, r, hash, blk, head)
	}
	return e.publishFailed(ctx, r, lower(tx.Hash()), "withdrawal transaction reverted")
}

// recordPayment reports a payment of r the contract made by transaction
// hash in block blk, found in its logs rather than through a stored
// payout: submitted at once, confirmed once Confirmations deep. Without
// the stored payout nothing else would ever confirm the request.
func (e *Executor) recordPayment(ctx context.Context, r request, hash common.Hash, blk, head uint64) error {
	if r.status == 1 {
		if err := e.publishSubmitted(ctx, r, hash); err != nil {
			return err
		}
	}
	if head < blk+e.cfg.Confirmations {
		return nil
	}
	return e.publishConfirmed(ctx, r, hash, blk)
}

// pay signs a payout, stores it, then sends it. A request the contract
// already paid (its stored payout lost or cleared) is reported, not paid
// again.
func (e *Executor) pay(ctx context.Context, r request, head uint64) error {
	if hash, blk, ok, err := e.paidBy(ctx, r.id); err != nil {
		return err
	} else if ok {
		e.log.Warn("withdraw request already paid on chain; recording that payment", "request", r.id, "tx", hash.Hex())
		return e.recordPayment(ctx, r, hash, blk, head)
	}
	nonce, err := e.chain.PendingNonceAt(ctx, e.operator)
	if err != nil {
		return fmt.Errorf("read operator nonce: %w", err)
	}
	opts := &bind.TransactOpts{
		From: e.operator, Nonce: new(big.Int).SetUint64(nonce), GasLimit: e.gasLimit(ctx, r),
		Context: ctx, NoSend: true,
		Signer: func(_ common.Address, tx *types.Transaction) (*types.Transaction, error) {
			return types.SignTx(tx, e.signer, e.cfg.OperatorKey)
		},
	}
	tx, err := e.contract.Withdraw(opts, big.NewInt(r.id), common.HexToAddress(r.to), r.amount)
	if err != nil {
		return fmt.Errorf("sign payout: %w", err)
	}
	raw, err := tx.MarshalBinary()
	if err != nil {
		return err
	}
	tag, err := e.pool.Exec(ctx, `UPDATE withdraw_requests SET raw_tx = $2 WHERE request_id = $1 AND raw_tx IS NULL`, r.id, raw)
	if err != nil {
		return fmt.Errorf("store payout: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return nil // another executor stored one first; the next round sends it
	}
	e.log.Info("paying withdrawal", "request", r.id, "tx", tx.Hash().Hex(), "to", r.to, "amount", r.amount)
	return e.resend(ctx, r, tx)
}

// gasLimit estimates a payout's gas; a payout that would revert gets the
// configured limit so that its failure is on chain for everyone to see.
func (e *Executor) gasLimit(ctx context.Context, r request) uint64 {
	data, err := e.abi.Pack("withdraw", big.NewInt(r.id), common.HexToAddress(r.to), r.amount)
	if err != nil {
		return e.cfg.GasLimit
	}
	gas, err := e.chain.EstimateGas(ctx, ethereum.CallMsg{From: e.operator, To: &e.cfg.Contract, Data: data})
	if err != nil {
		e.log.Warn("payout would revert; sending it to record the failure", "request", r.id, "error", err)
		return e.cfg.GasLimit
	}
	return gas + gas/4
}

// resend broadcasts the stored payout. A payout whose nonce was used by
// another transaction can never be mined: it is dropped, and the next
// round builds a new one (which the contract refuses if the id got paid).
func (e *Executor) resend(ctx context.Context, r request, tx *types.Transaction) error {
	err := e.chain.SendTransaction(ctx, tx)
	if err != nil && !alreadyKnown(err) {
		if strings.Contains(strings.ToLower(err.Error()), "nonce too low") {
			e.log.Warn("stored payout can no longer be mined; building another", "request", r.id, "tx", tx.Hash().Hex())
			_, derr := e.pool.Exec(ctx, `UPDATE withdraw_requests SET raw_tx = NULL WHERE request_id = $1 AND status = 1`, r.id)
			return derr
		}
		return fmt.Errorf("send payout %s: %w", tx.Hash().Hex(), err)
	}
	if r.status == 1 {
		return e.publishSubmitted(ctx, r, tx.Hash())
	}
	return nil
}

func alreadyKnown(err error) bool {
	s := strings.ToLower(err.Error())
	return strings.Contains(s, "already known") || strings.Contains(s, "already imported")
}

// paidBy reports whether the contract paid request id and, if so, the
// transaction and block of its Withdrawal log.
func (e *Executor) paidBy(ctx context.Context, id int64) (common.Hash, uint64, bool, error) {
	paid, err := e.contract.Paid(&bind.CallOpts{Context: ctx}, big.NewInt(id))
	if err != nil {
		return common.Hash{}, 0, false, fmt.Errorf("read paid(%d): %w", id, err)
	}
	if !paid {
		return common.Hash{}, 0, false, nil
	}
	it, err := e.contract.FilterWithdrawal(&bind.FilterOpts{Context: ctx}, []*big.Int{big.NewInt(id)}, nil)
	if err != nil {
		return common.Hash{}, 0, false, fmt.Errorf("find the payment of %d: %w", id, err)
	}
	defer it.Close()
	for it.Next() {
		return it.Event.Raw.TxHash, it.Event.Raw.BlockNumber, true, nil
	}
	return common.Hash{}, 0, false, fmt.Errorf("request %d is paid but its Withdrawal log is not found: %w", id, it.Error())
}

func lower(h common.Hash) string { return strings.ToLower(h.Hex()) }

func (e *Executor) publishSubmitted(ctx context.Context, r request, hash common.Hash) error {
	return e.cfg.Metrics.published(stateSubmitted, r.id, e.publish(ctx, r, topics.TypeWithdrawalSubmitted, fmt.Sprintf("withdrawal-submitted-%d", r.id),
		topics.WithdrawalSubmitted{RequestID: r.id, UserID: r.user, TxHash: lower(hash)}))
}

func (e *Executor) publishConfirmed(ctx context.Context, r request, hash common.Hash, block uint64) error {
	e.log.Info("withdrawal confirmed", "request", r.id, "tx", hash.Hex(), "block", block)
	return e.cfg.Metrics.published(stateConfirmed, r.id, e.publish(ctx, r, topics.TypeWithdrawalConfirmed, fmt.Sprintf("withdrawal-confirmed-%d", r.id),
		topics.WithdrawalConfirmed{RequestID: r.id, UserID: r.user, TxHash: lower(hash), BlockNumber: block}))
}

func (e *Executor) publishFailed(ctx context.Context, r request, hash, reason string) error {
	e.log.Warn("withdrawal failed; funds are returned", "request", r.id, "tx", hash, "reason", reason)
	return e.cfg.Metrics.published(stateFailed, r.id, e.publish(ctx, r, topics.TypeWithdrawalFailed, fmt.Sprintf("withdrawal-failed-%d", r.id),
		topics.WithdrawalFailed{RequestID: r.id, UserID: r.user, TxHash: hash, Reason: reason}))
}

// publish writes one funding event keyed by the user's wallet. The same
// event may be written again by a later round; the settler applies an id
// once.
func (e *Executor) publish(ctx context.Context, r request, typ, id string, payload any) error {
	env, err := topics.FundingEnvelope(typ, id, time.Now(), payload)
	if err != nil {
		return err
	}
	rec, err := kafka.NewRecord(topics.FundingEvents, []byte(r.to), env)
	if err != nil {
		return err
	}
	if err := e.cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		return fmt.Errorf("publish %s: %w", typ, err)
	}
	return nil
}
