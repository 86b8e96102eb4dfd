package devchain

import (
	"bytes"
	"context"
	"encoding/json"
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

type pendingBundle struct {
	txs     []*types.Transaction
	uuid    string
	arrived time.Time
	serial  int
}

// NewBuilder returns a builder on chain.
func NewBuilder(chain *Chain, log *slog.Logger) *Builder {
	return &Builder{chain: chain, log: log, Hold: 300 * time.Millisecond}
}

// rpcRequest is one JSON-RPC request to the builder.
type rpcRequest struct {
	ID     json.RawMessage   `json:"id"`
	Method string            `json:"method"`
	Params []json.RawMessage `json:"params"`
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
		out := make([]map[string]any, len(reqs))
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

func (b *Builder) answer(ctx context.Context, req rpcRequest) map[string]any {
	if req.Method == "evm_mine" {
		hash := b.Mine(ctx)
		return rpcResponse(req.ID, hash.Hex(), "")
	}
	if len(req.Params) != 1 {
		return rpcResponse(req.ID, nil, "params must be an array of one element")
	}
	var p struct {
		Txs             []string `json:"txs"`
		ReplacementUUID string   `json:"replacementUuid"`
	}
	_ = json.Unmarshal(req.Params[0], &p)
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

func (b *Builder) add(raws []string, uuid string) (string, error) {
	pb := &pendingBundle{uuid: uuid, arrived: time.Now()}
	var cat []byte
	for _, raw := range raws {
		bs, err := hexutil.Decode(raw)
		if err != nil {
			return "", err
		}
		tx := new(types.Transaction)
		if err := tx.UnmarshalBinary(bs); err != nil {
			return "", err
		}
		pb.txs = append(pb.txs, tx)
		cat = append(cat, tx.Hash().Bytes()...)
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
	sort.SliceStable(ready, func(i, j int) bool { return len(ready[i].txs) > len(ready[j].txs) })
	sent := map[string]bool{}
	cl := b.chain.Client()
	for _, p := range ready {
		for _, tx := range p.txs {
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

func rpcResponse(id json.RawMessage, result any, errMsg string) map[string]any {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	resp := map[string]any{"jsonrpc": "2.0", "id": id}
	if errMsg != "" {
		resp["error"] = map[string]any{"code": -32000, "message": errMsg}
	} else {
		resp["result"] = result
	}
	return resp
}
