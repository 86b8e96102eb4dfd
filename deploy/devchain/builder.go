package devchain

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
)

// Builder is the dev builder: eth_sendBundle and eth_cancelBundle over
// HTTP JSON-RPC. Before each block it sends the pending bundles' signed
// transactions to the chain, larger bundles first (a backrun carries its
// originator transaction, so it wins over the transaction alone), and
// skips transactions the block already has. A bundle waits Hold before it
// is eligible, as a real builder's auction gives searchers time to
// backrun. Replacement by replacementUuid keeps the latest bundle.
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

// ServeHTTP answers the builder's JSON-RPC.
func (b *Builder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID     json.RawMessage   `json:"id"`
		Method string            `json:"method"`
		Params []json.RawMessage `json:"params"`
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err := json.Unmarshal(body, &req); err != nil || len(req.Params) != 1 {
		writeRPC(w, req.ID, nil, "invalid request")
		return
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
			writeRPC(w, req.ID, nil, err.Error())
			return
		}
		writeRPC(w, req.ID, map[string]string{"bundleHash": hash}, "")
	case "eth_cancelBundle":
		b.cancel(p.ReplacementUUID)
		writeRPC(w, req.ID, nil, "")
	default:
		writeRPC(w, req.ID, nil, "method not found")
	}
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

// Prepare sends the eligible bundles to the chain's pool; the chain calls
// it under its lock right before a block.
func (b *Builder) Prepare(ctx context.Context) {
	b.mu.Lock()
	var ready, later []*pendingBundle
	for _, p := range b.pending {
		if time.Since(p.arrived) >= b.Hold {
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

func writeRPC(w http.ResponseWriter, id json.RawMessage, result any, errMsg string) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	resp := map[string]any{"jsonrpc": "2.0", "id": id}
	if errMsg != "" {
		resp["error"] = map[string]any{"code": -32000, "message": errMsg}
	} else {
		resp["result"] = result
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}
