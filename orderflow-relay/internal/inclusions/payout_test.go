package inclusions_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ethereum/go-ethereum/core/types"

	"blockspace.exchange/orderflow-relay/internal/inclusions"
)

// TestRefundPaidOnceByTwoRelays runs two watchers on one database, as two
// relay instances do, stepping them at the same time: the refund waits
// for its confirmations, then exactly one payout of the owed amount is
// sent and confirmed.
func TestRefundPaidOnceByTwoRelays(t *testing.T) {
	e := setup(t)
	relays := []*inclusions.Watcher{e.watcher(e.client(), 2), e.watcher(e.client(), 2)}
	stepAll := func() {
		t.Helper()
		var wg sync.WaitGroup
		errs := make([]error, len(relays))
		for i, w := range relays {
			wg.Go(func() { errs[i] = w.Step(t.Context()) })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	stepAll()
	origin, search := e.backrun(t)
	e.sim.Commit()
	stepAll()
	owed := e.owed(t, search)
	got := e.refunds(t)
	if len(got) != 1 || got[0].Status != "PENDING" || got[0].Amount != owed.String() || got[0].BlockHash != e.canonical(t, got[0].Block) {
		t.Fatalf("after the backrun's block: %+v (owed %s)", got, owed)
	}
	if st, _ := e.status(t, "orderflow_txs", "hash", origin); st != "INCLUDED" {
		t.Fatalf("originator tx %s", st)
	}
	e.sim.Commit()
	stepAll()
	if got := e.refunds(t); got[0].Status != "PENDING" || got[0].Payout != "" {
		t.Fatalf("paid with one confirmation of two: %+v", got)
	}
	e.sim.Commit()
	stepAll()
	if got := e.refunds(t); got[0].Status != "PAID" || got[0].Payout == "" {
		t.Fatalf("not paid with two confirmations: %+v", got)
	}
	for range 4 {
		e.sim.Commit()
		stepAll()
	}
	got = e.refunds(t)
	if got[0].Status != "CONFIRMED" || got[0].PayoutBlock == nil {
		t.Fatalf("payout not confirmed: %+v", got)
	}
	if n := e.payouts(t); n != 1 {
		t.Fatalf("payer sent %d transactions", n)
	}
	if b := e.balance(t, e.recipient); b.Cmp(owed) != 0 {
		t.Fatalf("recipient got %s, owed %s", b, owed)
	}
}

// crashingChain stands for a relay that dies while sending a payout: its
// send cancels the watcher's context (the process is gone), after
// forwarding the transaction to the node or before.
type crashingChain struct {
	inclusions.Chain
	forward bool
	cancel  context.CancelFunc
	sends   atomic.Int32
}

func (c *crashingChain) SendTransaction(ctx context.Context, tx *types.Transaction) error {
	c.sends.Add(1)
	if c.forward {
		if err := c.Chain.SendTransaction(ctx, tx); err != nil {
			return err
		}
	}
	c.cancel()
	return nil
}

// TestCrashWhilePayingPaysOnce kills a relay around the send of a payout
// and starts another on the same database: the payout stored before the
// send is the one that reaches the chain, once, and ends CONFIRMED.
func TestCrashWhilePayingPaysOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		// sent: the node got the payout before the crash; mined: a block
		// took it before the new relay started.
		sent, mined bool
	}{
		{name: "crash after storing, before sending"},
		{name: "crash after sending, before recording", sent: true},
		{name: "crash after sending, mined before the restart", sent: true, mined: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := setup(t)
			first := e.watcher(e.client(), 1)
			step(t, first)
			_, search := e.backrun(t)
			e.mine(t, first, 1)
			owed := e.owed(t, search)
			if got := e.refunds(t); len(got) != 1 || got[0].Status != "PENDING" {
				t.Fatalf("refund %+v", got)
			}
			e.sim.Commit() // the refund's confirmation

			ctx, cancel := context.WithCancel(t.Context())
			crashing := &crashingChain{Chain: e.client(), forward: tc.sent, cancel: cancel}
			_ = e.watcher(crashing, 1).Step(ctx)
			stored := e.refunds(t)
			if crashing.sends.Load() != 1 || len(stored) != 1 || stored[0].Status != "PAYING" || stored[0].Payout == "" {
				t.Fatalf("after the crash: %d sends, %+v", crashing.sends.Load(), stored)
			}
			if tc.mined {
				e.sim.Commit()
			}

			restarted := e.watcher(e.client(), 1)
			e.mine(t, restarted, 4)
			got := e.refunds(t)
			if got[0].Status != "CONFIRMED" || got[0].Payout != stored[0].Payout {
				t.Fatalf("after the restart: %+v, stored payout %s", got, stored[0].Payout)
			}
			if n := e.payouts(t); n != 1 {
				t.Fatalf("payer sent %d transactions", n)
			}
			if b := e.balance(t, e.recipient); b.Cmp(owed) != 0 {
				t.Fatalf("recipient got %s, owed %s", b, owed)
			}
		})
	}
}
