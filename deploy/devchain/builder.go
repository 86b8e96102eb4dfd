package devchain

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
)

// Builder is the dev builder: eth_sendBundle and eth_cancelBundle over
// HTTP JSON-RPC, one request or a batch (a JSON array of requests). Before
// each block it sends the pending bundles' signed transactions to the
// chain, larger bundles first (a backrun carries its originator
// transaction, so it wins over the transaction alone), and skips
// transactions the block already has. A bundle waits Hold before it is
// eligible, as a real builder's auction gives searchers time to backrun.
// Replacement by replacementUuid keeps the latest bundle. evm_mine makes a
// block at once with every pending bundle, held or not: tests and scripts
// that run the chain without automatic blocks decide when the auction
// closes.
type Builder struct {
	chain *Chain
	log   *slog.Logger
	Hold  time.Duration

	mu      sync.Mutex // guards pending
	pending []*pendingBundle
	serial  int
}

// pendingBundle holds its transactions as sent: they are decoded when a
// block takes them, so a bundle costs the builder little until then.
type pendingBundle struct {
	raws    [][]byte
	uuid    string
	arrived time.Time
	serial  int
}

// NewBuilder returns a builder on chain.
func NewBuilder(chain *Chain, log *slog.Logger) *Builder {
	return &Builder{chain: chain, log: log, Hold: 300 * time.Millisecond}
}

// rpcRequest is one JSON-RPC request to the builder, decoded in one
// pass (every method's parameter is a bundle or a cancellation).
type rpcRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params []bundleParam   `json:"params"`
}

type bundleParam struct {
	Txs             []string `json:"txs"`
	ReplacementUUID string   `json:"replacementUuid"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type rpcReply struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// ServeHTTP answers the builder's JSON-RPC: one request object, or a batch
// answered with an array in the same order.
func (b *Builder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	body = bytes.TrimLeft(body, " \t\r\n")
	w.Header().Set("Content-Type", "application/json")
	if len(body) > 0 && body[0] == '[' {
		var reqs []rpcRequest
		if err := json.Unmarshal(body, &reqs); err != nil || len(reqs) == 0 {
			_ = json.NewEncoder(w).Encode(rpcResponse(nil, nil, "invalid batch request"))
			return
		}
		out := make([]rpcReply, len(reqs))
		for i, req := range reqs {
			out[i] = b.answer(r.Context(), req)
		}
		_ = json.NewEncoder(w).Encode(out)
		return
	}
	var req rpcRequest
	if err := json.Unmarshal(body, &req); err != nil {
		_ = json.NewEncoder(w).Encode(rpcResponse(nil, nil, "invalid request"))
		return
	}
	_ = json.NewEncoder(w).Encode(b.answer(r.Context(), req))
}

func (b *Builder) answer(ctx context.Context, req rpcRequest) rpcReply {
	if req.Method == "evm_mine" {
		hash := b.Mine(ctx)
		return rpcResponse(req.ID, hash.Hex(), "")
	}
	if len(req.Params) != 1 {
		return rpcResponse(req.ID, nil, "params must be an array of one element")
	}
	p := req.Params[0]
	switch req.Method {
	case "eth_sendBundle":
		hash, err := b.add(p.Txs, p.ReplacementUUID)
		if err != nil {
			return rpcResponse(req.ID, nil, err.Error())
		}
		return rpcResponse(req.ID, map[string]string{"bundleHash": hash}, "")
	case "eth_cancelBundle":
		b.cancel(p.ReplacementUUID)
		return rpcResponse(req.ID, nil, "")
	}
	return rpcResponse(req.ID, nil, "method not found")
}

// Mine makes a block now with every pending bundle, whether or not it
// waited Hold, and returns the block's hash.
func (b *Builder) Mine(ctx context.Context) common.Hash {
	return b.chain.MineWith(ctx, func(ctx context.Context) { b.include(ctx, 0) })
}

// add keeps a bundle and returns its hash, keccak256 of its transactions'
// hashes; a transaction's hash is keccak256 of its binary encoding, so no
// transaction is decoded here.
func (b *Builder) add(raws []string, uuid string) (string, error) {
	if len(raws) == 0 {
		return "", errors.New("bundle without transactions")
	}
	pb := &pendingBundle{uuid: uuid, arrived: time.Now()}
	cat := make([]byte, 0, 32*len(raws))
	for _, raw := range raws {
		bs, err := hexutil.Decode(raw)
		if err != nil || len(bs) == 0 {
			return "", fmt.Errorf("transaction %.20s…: not 0x hex", raw)
		}
		pb.raws = append(pb.raws, bs)
		cat = append(cat, crypto.Keccak256(bs)...)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if uuid != "" {
		b.dropGroup(uuid)
	}
	b.serial++
	pb.serial = b.serial
	b.pending = append(b.pending, pb)
	return crypto.Keccak256Hash(cat).Hex(), nil
}

func (b *Builder) cancel(uuid string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.dropGroup(uuid)
}

func (b *Builder) dropGroup(uuid string) {
	kept := b.pending[:0]
	for _, p := range b.pending {
		if p.uuid != uuid {
			kept = append(kept, p)
		}
	}
	b.pending = kept
}

// Prepare sends the bundles that waited Hold to the chain's pool; the
// chain calls it under its lock right before a block.
func (b *Builder) Prepare(ctx context.Context) { b.include(ctx, b.Hold) }

// include sends the bundles that waited at least hold to the chain's pool.
func (b *Builder) include(ctx context.Context, hold time.Duration) {
	b.mu.Lock()
	var ready, later []*pendingBundle
	for _, p := range b.pending {
		if time.Since(p.arrived) >= hold {
			ready = append(ready, p)
		} else {
			later = append(later, p)
		}
	}
	b.pending = later
	b.mu.Unlock()
	sort.SliceStable(ready, func(i, j int) bool { return len(ready[i].raws) > len(ready[j].raws) })
	sent := map[string]bool{}
	cl := b.chain.Client()
	for _, p := range ready {
		for _, raw := range p.raws {
			tx := new(types.Transaction)
			if err := tx.UnmarshalBinary(raw); err != nil {
				b.log.Debug("dev builder: transaction does not decode", "error", err)
				continue
			}
			h := tx.Hash().Hex()
			if sent[h] {
				continue
			}
			if err := cl.SendTransaction(ctx, tx); err != nil {
				b.log.Debug("dev builder: transaction not included", "tx", h, "error", err)
				continue
			}
			sent[h] = true
		}
	}
}

func rpcResponse(id json.RawMessage, result any, errMsg string) rpcReply {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	if errMsg != "" {
		return rpcReply{JSONRPC: "2.0", ID: id, Error: &rpcError{Code: -32000, Message: errMsg}}
	}
	if result == nil {
		result = json.RawMessage("null")
	}
	return rpcReply{JSONRPC: "2.0", ID: id, Result: result}
}
